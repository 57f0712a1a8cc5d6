// The probe's route table as plain data, for a library user, the CLI's group
// flags, `extmem probe --list-routes` and the tests that hold the schema and
// the README to it. The table itself is private (src/probe/routes.h); this is
// a copy made on each call.
#pragma once

#include <string>
#include <vector>

namespace extmem::probe {

/// One leg a route may report.
struct LegInfo {
  std::string name;      ///< trace key, e.g. "vkimport": a stable interface
  bool decisive = true;  ///< true: [D], counts for the verdict; false: [i], informational
  std::string proves;    ///< one line: what a round trip through this leg shows
};

/// A test-only fault a route injects itself under EXTMEM_TEST_FAULT
/// (docs/probe.md, "Test-only fault hooks"): a negative control of the tests.
struct FaultInfo {
  std::string action;  ///< EXTMEM_TEST_FAULT's ACTION, e.g. "closefd"
  std::string role;    ///< "server" or "client": the half that injects it
  std::string step;    ///< a STEP-SUBSTRING that reaches it
  std::string breaks;  ///< what it breaks, and what the row must then say
};

/// A handle type a route uses and the feature it needs ("OPAQUE_FD", "exportable").
struct HandleInfo {
  std::string type;     ///< "OPAQUE_FD", "DMA_BUF", "HOST_ALLOCATION", "AHARDWAREBUFFER"
  std::string feature;  ///< "exportable" or "importable"
};

/// One route: one row name (plus "@mt<i>" twins where memory_type_twins, and
/// "@pidfd" twins where pidfd_twin and --fd-transport asks for them).
struct RouteInfo {
  std::string row;                      ///< printed row name: a stable interface
  std::string group;                    ///< one of groups()
  std::string not_built;                ///< non-empty: why this build cannot run it (always SKIP)
  std::string platform;                 ///< "any" or "android"
  std::vector<std::string> extensions;  ///< Vulkan device extensions it requires
  std::vector<HandleInfo> handle_types;
  bool gl = false;                      ///< needs an EGL/GLES context
  bool cuda = false;                    ///< needs the CUDA driver
  std::vector<LegInfo> legs;            ///< every leg it may report, in report order
  std::vector<FaultInfo> faults;        ///< the test-only faults its halves inject themselves
  bool memory_type_twins = false;       ///< --memory-type=INDEX|all applies (the exporter picks its memory)
  std::string server_does, client_does;  ///< what each half does; client_does empty for a single-process route
  bool measured = true;                  ///< --measure gives it a measuring run (false: its legs move no bytes, or not built)
  bool pidfd_twin = false;               ///< its halves pass fds: --fd-transport=pidfd|both runs it as "<row>@pidfd"
};

/// A group of rows: --only-GROUP, and --no-GROUP where excludable.
struct GroupInfo {
  std::string name;         ///< "t0", "t1", "t3", "gles"
  std::string rows;         ///< "the T1 (Vulkan export) rows"
  bool excludable = false;  ///< offers --no-GROUP
};

/// Every route, in the order rows are printed.
std::vector<RouteInfo> routes();
/// Every group, in --help order.
std::vector<GroupInfo> groups();

/// The route row a printed row belongs to: "T1-opaque-fd@mt2" (a --memory-type
/// twin), "T1-opaque-fd@pidfd" (an --fd-transport twin) and "T1-opaque-fd@mt2@pidfd"
/// -> "T1-opaque-fd"; any other name is returned unchanged.
std::string base_row(const std::string& row);

/// The twin's memory type index ("T1-opaque-fd@mt2" and "T1-opaque-fd@mt2@pidfd" -> 2),
/// or -1 for a row that is not a memory-type twin.
int twin_memory_type(const std::string& row);

/// Whether `row` is an --fd-transport twin, its fds passed by pidfd_getfd ("…@pidfd").
bool is_pidfd_twin(const std::string& row);

/// The route table as a JSON document: {"groups": [...], "routes": [...]}, each
/// route with the fields of RouteInfo (`extmem probe --list-routes=json`).
std::string routes_json();

/// The route table as a Markdown table (row, group, requires, legs, halves): the README's route table.
std::string routes_markdown();

/// The faults the routes inject themselves as a Markdown table (row, action,
/// half, step, what it breaks): docs/probe.md's list (`extmem probe --list-routes=faults`).
std::string faults_markdown();

/// The regular expression every printed row name matches: one of the table's
/// rows, then an optional "@mt<INDEX>" and an optional "@pidfd" twin suffix;
/// docs/probe-result.schema.json's $defs.row_name.pattern (`extmem probe
/// --list-routes=row-pattern`; scripts/regenerate-docs.sh writes it there).
std::string row_name_pattern();

}  // namespace extmem::probe
