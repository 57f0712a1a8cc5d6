// `extmem probe`: option parsing only; the work is in extmem::probe.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/args_file.h"
#include "cli/commands.h"
#include "cli/probe_option_text.h"
#include "cli/probe_serve.h"
#include "extmem/core/duration.h"
#include "extmem/probe/failure_codes.h"
#include "extmem/probe/probe.h"
#include "extmem/probe/routes.h"
#include "extmem/probe/worker.h"

namespace extmem::cli {
namespace {

std::vector<std::string> split_rows(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    std::size_t start = 0;
    while (start <= v.size()) {
      std::size_t comma = v.find(',', start);
      std::string part = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      out.push_back(part);  // an empty name (--only= or "a,,b") is refused by validate(), not taken as "every row"
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace

namespace {

// Every option of `extmem probe`, bound to one State. The command line fills one
// State; each line of an args file fills a fresh one of its own, so that a
// refusal names the line and the file's options can be merged under the
// command line's (docs/probe.md, "Launch without a shell").
struct State {
  probe::ProbeOptions options;
  std::vector<std::string> only;
  CLI::Option* only_opt = nullptr;
  std::vector<probe::GroupInfo> groups = probe::groups();
  std::deque<bool> only_group, no_group;  // one flag each per group, in groups() order (deque: real bool&)
  struct Flag {
    std::string name;
    CLI::Option* opt;
    bool* target;
  };
  std::vector<Flag> flags;
  std::string child;
  std::string list_routes;  // hidden --list-routes[=json|markdown|faults|row-pattern]: the route table (tests, README), the faults (docs/probe.md), the schema's row pattern; alone: markdown
  CLI::Option* list_routes_opt = nullptr;
  bool list_failure_codes = false;  // --list-failure-codes: docs/failure-codes.md on stdout
  std::map<std::string, std::string> text;                    // each valued option's text, as given
  std::vector<std::pair<std::string, CLI::Option*>> valued;   // in --help order
  std::string args_file;                                      // --args-file=F (the CLI's own: not a ProbeOptions field)
  CLI::Option* args_file_opt = nullptr;
  std::string marker;  // first non-option word: marker mode
  CLI::Option* marker_opt = nullptr;
  std::vector<CLI::Option*> command_line_only;  // refused inside an args file: internal modes, nesting, the marker
  std::string child_role;          // --role: the fresh child's label (its parameters come in its job)
  unsigned worker_device_index = 0;  // --device-index: the device a worker opens unless --worker-select
  bool worker = false;
  bool fd_transport_check = false;  // hidden: phase A's fd-transport check child (extmem/probe/worker.h)
  std::vector<std::string> warm;
  std::string worker_device;
  bool worker_select = false;
  std::vector<std::string> phase_a;  // the drivers phase A enumerates: vulkan[,gl][,cuda]
};

// Adds the options of `extmem probe` to `cmd`, bound to `st`. Every option with
// a value is taken as text and handed to parse_probe_option, so a refusal is
// in the library's words (probe::kOptionWords) whether the text is not a number
// or out of range (probe::validate()); CLI11's own conversions would wrap
// "-4096" around and say only "could not convert" for "abc".
struct ProbeOptionAdder {
  CLI::App* cmd;
  State& st;
  void valued(const std::string& name, const std::string& type, const std::string& help,
              const std::string& shown_default) {
    CLI::Option* opt = cmd->add_option(name, st.text[name], help)->type_name(type);
    if (!shown_default.empty()) opt->default_str(shown_default);
    st.valued.emplace_back(name, opt);
  }
  void flag(const std::string& name, bool& target, const std::string& help) {
    st.flags.push_back({name, cmd->add_flag(name, target, help), &target});
  }
};

// Which rows run and what each does: the allocation, the row choice, the
// limits, the measurements. The defaults --help shows are the library's
// (probe.h), not restated here.
void define_row_options(ProbeOptionAdder& add, const probe::ProbeOptions& defaults) {
  CLI::App* cmd = add.cmd;
  State& st = add.st;
  probe::ProbeOptions& o = st.options;
  add.valued("--size", "BYTES", "Shared allocation in bytes: a multiple of 4096, at least 32768, fitting the heap",
             std::to_string(defaults.size));
  add.flag("--regions-at-end", o.regions_at_end, "Place the 4 KiB verification regions in the last 32 KiB");
  st.only_opt = cmd->add_option("--only", st.only, "Run only these rows (comma-separated row names)")->delimiter(',');
  // The group flags come from the route table's groups: --only-GROUP for each, --no-GROUP where excludable.
  st.only_group.assign(st.groups.size(), false);
  st.no_group.assign(st.groups.size(), false);
  for (std::size_t i = 0; i < st.groups.size(); ++i)
    add.flag("--only-" + st.groups[i].name, st.only_group[i], "Run only " + st.groups[i].rows);
  for (std::size_t i = 0; i < st.groups.size(); ++i)
    if (st.groups[i].excludable) add.flag("--no-" + st.groups[i].name, st.no_group[i], "Skip " + st.groups[i].rows);
  add.valued("--timeout", "DURATION", "Per-route limit (" + describe_duration(probe::kTimeoutRange) + ")",
             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(defaults.timeout).count()) + "s");
  add.valued("--soak", "DURATION",
             "Repeat each OK route's round trip this long, counting stale words; 0: off (" +
                 describe_duration(probe::kSoakRange) + ")",
             "");
  add.flag("--measure", o.measure,
           "Per round-tripped leg: CPU and GPU bandwidth vs private/device-local memory, export/import/map latency");
  add.valued("--image-size", "WxH", "Texels of the image rows' shared image, each side 1..maxImageDimension2D",
             std::to_string(defaults.image_width) + "x" + std::to_string(defaults.image_height));
  add.valued("--measure-size", "BYTES", "Bytes of the measured allocation: a multiple of 4096, 1 MiB to 1 GiB",
             std::to_string(defaults.measure_size));
  add.valued("--measure-repeats", "N", "Samples per figure (1..100); the median and min/max are reported",
             std::to_string(defaults.measure_repeats));
  add.valued("--memory-type", "auto|all|INDEX",
             "Memory type the exporting rows allocate from: auto, all (one row per HOST_VISIBLE type), or INDEX",
             probe::to_string(defaults.memory_type));
}

// Where and how the rows run, what is written and what decides the exit; the
// launch without a shell (--args-file, the marker); --list-devices.
void define_run_options(ProbeOptionAdder& add, const probe::ProbeOptions& defaults) {
  CLI::App* cmd = add.cmd;
  State& st = add.st;
  probe::ProbeOptions& o = st.options;
  add.valued("--junit", "FILE", "Write one JUnit testcase per row to FILE", "");
  add.valued("--json", "FILE", "Write the whole run as JSON (schema docs/probe-result.schema.json)", "");
  add.valued("--device", "DEVICE", "Physical device: INDEX, deviceUUID or NAME-SUBSTRING (default: first GPU)", "");
  add.valued("--jobs", "N", "Routes run side by side, 1..64 (at most one per CPU and per 512 MiB available); 0 or absent: 1", "");
  add.valued("--isolate", "none|route", "route: fresh processes for every route; none: warm workers (default)",
             probe::to_string(defaults.isolate));
  add.valued("--gl-driver", "auto|system|zink|llvmpipe",
             "GL for the GLES rows: auto (zink on lavapipe, else the system GL), system, zink or llvmpipe",
             probe::to_string(defaults.gl_driver));
  add.valued("--fd-transport", "scm|pidfd|both",
             "How rows that pass an fd pass it: scm (SCM_RIGHTS), pidfd (pidfd_getfd; those rows print as ROW@pidfd), "
             "both (each such row, then its ROW@pidfd twin)",
             probe::to_string(defaults.fd_transport));
  add.valued("--expect-transport", "shm|posix|sysv|cma|tcp",
             "The UCX rows' expected path: shm (any shared-memory transport, the default) or one transport; bytes on "
             "another (UCX fell back to tcp) FAIL the row",
             probe::to_string(defaults.expect_transport));
  add.valued("--require", "ROW[,ROW...]", "Rows that must be OK: the exit follows them; a name matching no row fails (docs/fleet.md)", "");
  add.valued("--require-group", "GROUP[,GROUP...]", "Groups whose every row must be OK (as --require)", "");
  add.valued("--expect", "FILE", "Baseline of expected statuses per row (and device or driver); differences fail", "");
  add.flag("--npd", o.npd, "node-problem-detector plugin: one line on stdout, exit 0 OK, 1 problem, 2 unknown");
  add.valued("--prometheus", "FILE", "Write a Prometheus textfile (node_exporter) of the row statuses and figures", "");
  add.valued("--ctrf", "FILE", "Write a CTRF JSON report, one test per row", "");
  add.valued("--peer", "ENDPOINT",
             "Run one half of every route in `extmem probe serve` listening at ENDPOINT (a socket path, @NAME or "
             "tcp:HOST:PORT)",
             "");
  st.args_file_opt = cmd->add_option("--args-file", st.args_file,
                                     "Read options from FILE: shell-like words, # comments; the command line wins")
                         ->type_name("FILE");
  add.valued("--output", "FILE", "Print to FILE instead of stdout, written as the run goes (created once options are valid)",
             "");
  add.valued("--verdict-file", "FILE", "At the end, write one VERDICT line (status, counts, exit code) to FILE atomically",
             "");
  st.marker_opt = cmd->add_option("marker", st.marker,
                                  "Marker mode: options from MARKER.args, the VERDICT line written to MARKER")
                      ->type_name("MARKER");
  add.flag("--list-devices", o.list_devices, "List the Vulkan physical devices and exit");
}

// The options refused inside an args file: the launch options, the hidden
// listings and the modes the probe starts itself in (child, worker).
void define_internal_options(CLI::App* cmd, State& st) {
  std::vector<CLI::Option*>& internal = st.command_line_only;
  internal = {st.args_file_opt, st.marker_opt};
  // --list-routes alone is --list-routes=markdown (the README's table); the value is checked at run time.
  st.list_routes_opt = cmd->add_option("--list-routes", st.list_routes)->expected(0, 1)->group("");
  internal.push_back(st.list_routes_opt);
  cmd->add_flag("--list-failure-codes", st.list_failure_codes,
                "Print the failure-code table (docs/failure-codes.md) and exit");
  // Child mode: started by the probe itself with its sockets on fds 3 and 4; its job comes on fd 4.
  internal.push_back(cmd->add_option("--child", st.child)->group(""));
  internal.push_back(cmd->add_option("--role", st.child_role)->group(""));
  // Worker mode: a warm process started by the probe itself with its control socket on fd 3.
  internal.push_back(cmd->add_flag("--worker", st.worker)->group(""));
  internal.push_back(cmd->add_option("--device-index", st.worker_device_index)->group(""));
  internal.push_back(cmd->add_flag("--fd-transport-check", st.fd_transport_check)->group(""));
  internal.push_back(cmd->add_option("--warm", st.warm)->group(""));
  internal.push_back(cmd->add_flag("--worker-select", st.worker_select)->group(""));
  internal.push_back(cmd->add_option("--worker-device", st.worker_device)->group(""));
  internal.push_back(cmd->add_option("--phase-a", st.phase_a)->delimiter(',')->group(""));
}

void define_options(CLI::App* cmd, State& st) {
  ProbeOptionAdder add{cmd, st};
  const probe::ProbeOptions defaults;
  define_row_options(add, defaults);
  define_run_options(add, defaults);
  define_internal_options(cmd, st);
}

// What one parse gave, with where each value came from ("" for the command
// line, "FILE:LINE" for an args file), so a refusal can point at it.
struct Given {
  struct Value {
    std::string text, origin;
  };
  std::map<std::string, Value> values;
  std::set<std::string> flags;
  std::optional<std::vector<std::string>> only;
};

Given collect(const State& st, const std::string& origin) {
  Given g;
  for (const auto& [name, opt] : st.valued)
    if (opt->count() > 0) g.values[name] = {st.text.at(name), origin};
  for (const State::Flag& f : st.flags)
    if (f.opt->count() > 0) g.flags.insert(f.name);
  if (st.only_opt->count() > 0) g.only = st.only;
  return g;
}

// `high` over `low`: a value or --only given in `high` replaces `low`'s; flags add up
// (a flag cannot be unset, so one set in either place is set).
Given over(Given high, const Given& low) {
  for (const auto& [name, v] : low.values) high.values.emplace(name, v);  // emplace keeps high's
  high.flags.insert(low.flags.begin(), low.flags.end());
  if (!high.only) high.only = low.only;
  return high;
}

// The options of an args file, one parse per line (every word of an option lies
// on its line), later lines over earlier ones. Refusals: "FILE:LINE: ...".
Result<Given> given_from_file(const std::string& path) {
  auto words = read_args_file(path);
  if (!words) return words.error();
  auto refuse = [&](unsigned line, const std::string& what) {
    return Error{"--args-file", ErrorKind::invalid_argument, {}, fmt::format("{}:{}: {}", path, line, what)};
  };
  Given file;
  for (std::size_t i = 0; i < words->size();) {
    const unsigned line = (*words)[i].line;
    std::vector<std::string> args;  // CLI11 takes them last word first
    for (; i < words->size() && (*words)[i].line == line; ++i) {
      const std::string& w = (*words)[i].text;
      // As on the command line (main.cpp): CLI11 would take the next word as the value.
      if (w.size() > 3 && w.rfind("--", 0) == 0 && w.find('=') == w.size() - 1)
        return refuse(line, w.substr(0, w.size() - 1) + ": the value after '=' is empty");
      args.push_back(w);
    }
    std::reverse(args.begin(), args.end());
    CLI::App app;
    app.set_help_flag();  // "--help" in a file is an unknown word, not a request for help
    State st;
    define_options(&app, st);
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return refuse(line, e.what());
    }
    if (st.marker_opt->count() > 0)
      return refuse(line, fmt::format("\"{}\" is not an option (a marker path is given on the command line only)",
                                      st.marker));
    for (const CLI::Option* o : st.command_line_only)
      if (o->count() > 0) {
        const std::string name = o->get_lnames().empty() ? o->get_name() : "--" + o->get_lnames().front();
        return refuse(line, name + " is not accepted in an args file");
      }
    file = over(collect(st, fmt::format("{}:{}", path, line)), file);
  }
  return file;
}

int refused(const std::string& what) {
  std::cerr << "extmem probe: " << what << "\n";
  return probe::kExitUsage;
}

// Worker mode: a warm process started by the probe itself with its control socket on fd 3.
int run_probe_worker(State& st) {
  probe::WorkerArgs w;
  w.device_index = st.worker_device_index;
  if (st.worker_select) w.select = st.worker_device;
  for (const std::string& d : st.phase_a) {
    w.phase_a = true;
    w.phase_a_gl = w.phase_a_gl || d == "gl";
    w.phase_a_cuda = w.phase_a_cuda || d == "cuda";
  }
  if (!st.text["--gl-driver"].empty()) w.gl_driver = st.text["--gl-driver"];
  for (const std::string& d : st.warm) {
    w.warm_gl = w.warm_gl || d == "gl";
    w.warm_cuda = w.warm_cuda || d == "cuda";
  }
  return probe::run_worker(w);
}

// Launch without a shell: the options of an args file (--args-file, or
// MARKER.args in marker mode, whose verdict goes to MARKER) under those of the
// command line in `given`. Returns nothing, or the exit status of a refusal it has said.
std::optional<int> merge_args_file(const State& st, Given& given) {
  const bool marker_mode = st.marker_opt->count() > 0;
  std::string args_path = st.args_file;
  if (st.args_file_opt->count() > 0 && args_path.empty()) return refused("--args-file: the path is empty");
  if (marker_mode) {
    if (st.marker.empty()) return refused("marker: the marker path is empty");
    if (st.args_file_opt->count() > 0)
      return refused("--args-file: not accepted with a marker path (its options are read from MARKER.args)");
    args_path = st.marker + ".args";
  }
  if (!args_path.empty()) {
    auto file = given_from_file(args_path);
    if (!file) {
      const Error& e = file.error();
      return refused(e.step + ": " + e.detail + (e.code.empty() ? "" : ", " + e.code));
    }
    given = over(std::move(given), *file);
  }
  if (marker_mode) {
    if (given.values.count("--verdict-file") > 0)
      return refused("--verdict-file: not accepted with a marker path (the verdict is written to the marker)");
    given.values["--verdict-file"] = {st.marker, ""};
  }
  return std::nullopt;
}

// Sets st.options from `given`: each value through parse_probe_option (a
// refusal names the args file line it came from), the flags, the rows and
// groups. Returns nothing, or the exit status of a refusal it has said.
std::optional<int> apply_given(State& st, const Given& given) {
  probe::ProbeOptions& opts = st.options;
  for (const auto& [name, opt] : st.valued) {
    auto it = given.values.find(name);
    if (it == given.values.end()) continue;
    if (auto s = parse_probe_option(opts, name, it->second.text); !s) {
      const std::string where = it->second.origin.empty() ? "" : "--args-file: " + it->second.origin + ": ";
      return refused(where + s.error().step + ": " + s.error().detail);
    }
  }
  for (const State::Flag& f : st.flags)
    if (given.flags.count(f.name) > 0) *f.target = true;
  opts.only = split_rows(given.only.value_or(std::vector<std::string>{}));
  for (std::size_t i = 0; i < st.groups.size(); ++i) {
    if (st.only_group[i]) opts.groups.push_back(st.groups[i].name);
    if (st.no_group[i]) opts.excluded_groups.push_back(st.groups[i].name);
  }
  return std::nullopt;
}

// --list-routes[=json|markdown|faults|row-pattern]: the route table, the faults routes inject
// themselves, or the pattern of a row name (the schema's).
int list_routes(const State& st) {
  const std::string form = st.list_routes.empty() ? "markdown" : st.list_routes;
  if (form != "json" && form != "markdown" && form != "faults" && form != "row-pattern") {
    std::cerr << "extmem probe: --list-routes: \"" << form
              << "\" is not accepted: json, markdown, faults or row-pattern (--list-routes alone: markdown)\n";
    return probe::kExitUsage;
  }
  // The other options are refused as a run would refuse them, though the table ignores them.
  if (auto v = probe::validate(st.options); !v) {
    std::cerr << "extmem probe: " << v.error().step << ": " << v.error().detail << "\n";
    return probe::kExitUsage;
  }
  if (form == "json") std::cout << probe::routes_json();
  else if (form == "faults") std::cout << probe::faults_markdown();
  else if (form == "row-pattern") std::cout << probe::row_name_pattern() << "\n";
  else std::cout << probe::routes_markdown();
  return probe::kExitOk;
}

Runner add_probe(CLI::App& app);
const Registration registered{add_probe};

Runner add_probe(CLI::App& app) {
  auto state = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand("probe", "Which memory-sharing routes work on this device, and do they really alias?");
  define_options(cmd, *state);
  CLI::App* serve = nullptr;
  auto run_serve = add_probe_serve(cmd, &serve);

  return [state, serve, run_serve]() -> int {
    if (serve->parsed()) return run_serve();
    probe::ProbeOptions& opts = state->options;
    // This command is the worker executable (--worker, --child below): its halves are its own processes.
    opts.worker = "/proc/self/exe";
    if (state->fd_transport_check) return probe::run_fd_transport_check();
    if (!state->child.empty()) return probe::run_fresh_child(state->child, state->child_role);
    if (state->worker) return run_probe_worker(*state);
    Given given = collect(*state, "");
    if (auto refusal = merge_args_file(*state, given)) return *refusal;
    if (auto refusal = apply_given(*state, given)) return *refusal;
    if (state->list_failure_codes) {
      std::cout << probe::failure_codes_markdown();
      return probe::kExitOk;
    }
    if (state->list_routes_opt->count() > 0) return list_routes(*state);
    return probe::run(opts, std::cout, std::cerr);
  };
}
}  // namespace

}  // namespace extmem::cli
