// extmem probe: which memory-sharing routes work on a device, and do they
// really alias? docs/probe.md is the reference for every rule used here.
#pragma once

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/duration.h"
#include "extmem/core/error.h"

namespace extmem::probe {

/// Process exit codes of `extmem probe` (docs/probe.md, "Output").
enum ExitCode : int {
  kExitOk = 0,        ///< no row is FAIL or PARTIAL
  kExitFailed = 1,    ///< at least one row is FAIL or PARTIAL
  kExitUsage = 2,     ///< bad option value
  kExitCannotRun = 3, ///< no Vulkan loader, no device, or a child could not be started
};

/// Bounds of --timeout (per route, inclusive): 1 ms to 1 h, in the duration grammar.
inline constexpr DurationRange kTimeoutRange{std::chrono::milliseconds(1), std::chrono::hours(1)};
/// Bounds of --soak (inclusive): 0 (off) to 1 h.
inline constexpr DurationRange kSoakRange{std::chrono::nanoseconds(0), std::chrono::hours(1)};

/// --isolate: how the route halves run.
enum class Isolation {
  none,   ///< warm workers that run one half after another (the default)
  route,  ///< fresh processes for every route
};

/// --fd-transport: how the rows that pass an fd pass it (docs/probe.md, "How fds cross").
enum class FdTransportChoice {
  scm,    ///< SCM_RIGHTS (the default)
  pidfd,  ///< pidfd_getfd only: each such row runs as "<row>@pidfd" instead
  both,   ///< each such row, then its "@pidfd" twin
};

/// --gl-driver: which GL implementation serves the GLES rows (docs/probe.md, "Which GL serves").
enum class GlDriverRequest {
  automatic,  ///< "auto": zink where the selected Vulkan device is Mesa's lavapipe, else the system GL
  system,     ///< the environment as the probe found it; libEGL chooses
  zink,       ///< Mesa's GL on the Vulkan driver lavapipe
  llvmpipe,   ///< Mesa's software GL
};

/// --memory-type: which memory type the exporting rows allocate from.
struct MemoryTypeChoice {
  enum class Mode {
    automatic,  ///< "auto": each row chooses
    all,        ///< "all": each exporting row, then one "@mtN" twin per HOST_VISIBLE memory type
    index,      ///< INDEX: only memory type `type_index` ("@mtN"), which must be HOST_VISIBLE (checked after phase A)
  };
  Mode mode = Mode::automatic;
  std::uint32_t type_index = 0;  ///< memory type index when mode is index
  bool operator==(const MemoryTypeChoice&) const = default;
};

/// The option's word for each value ("none", "route"; "scm", "pidfd", "both";
/// "auto", "system", "zink", "llvmpipe").
const char* to_string(Isolation isolation) noexcept;
const char* to_string(FdTransportChoice transport) noexcept;
const char* to_string(GlDriverRequest driver) noexcept;
/// "auto", "all", or the memory type index in decimal.
std::string to_string(const MemoryTypeChoice& choice);

// The options' defaults, each stated here once: ProbeOptions starts from them,
// and so do the records the run copies them into and the CLI's --help.
inline constexpr std::size_t kDefaultSize = 65536;                     ///< --size, bytes
inline constexpr std::chrono::seconds kDefaultTimeout{60};             ///< --timeout, per route
inline constexpr std::size_t kDefaultMeasureSize = std::size_t{64} << 20;  ///< --measure-size, bytes
inline constexpr unsigned kDefaultMeasureRepeats = 7;                  ///< --measure-repeats, samples per figure
inline constexpr std::uint32_t kDefaultImageSide = 256;               ///< --image-size, texels a side
inline constexpr GlDriverRequest kDefaultGlDriver = GlDriverRequest::automatic;  ///< --gl-driver
inline constexpr MemoryTypeChoice kDefaultMemoryType{};                ///< --memory-type: auto

/// What an option accepts, in the words every refusal of it uses: validate()'s,
/// and those of a front end that reads the option as text (the extmem command's
/// grammar, src/cli/). --timeout and --soak are not here: their words are
/// describe_duration() of kTimeoutRange and kSoakRange (extmem/core/duration.h).
struct OptionWords {
  const char* option;   ///< "--size"
  const char* accepts;  ///< "a multiple of 4096 and at least 32768 (8 regions of 4 KiB)"
};
inline constexpr OptionWords kOptionWords[] = {
    {"--size", "a multiple of 4096 and at least 32768 (8 regions of 4 KiB)"},
    {"--measure-size", "a multiple of 4096 from 1048576 (1 MiB) to 1073741824 (1 GiB)"},
    {"--measure-repeats", "a whole number from 1 to 100"},
    {"--jobs", "a whole number from 1 to 64, or 0 for the default (1 lane)"},
    {"--isolate", "route (fresh processes for every route) or none (warm workers, the default)"},
    {"--memory-type", "auto, all, or a memory type INDEX (0..31)"},
    {"--image-size", "WxH in texels, e.g. 256x256, each side from 1 to the device's maxImageDimension2D"},
    {"--gl-driver",
     "auto (zink where the selected Vulkan device is Mesa's lavapipe, else the system GL), system (the environment "
     "and libEGL choose), zink (Mesa's GL on lavapipe) or llvmpipe (Mesa's software GL)"},
    {"--fd-transport",
     "scm (SCM_RIGHTS, the default), pidfd (pidfd_getfd: rows that pass an fd run as ROW@pidfd) or both"},
    {"--expect-transport",
     "shm (any shared-memory transport of UCX: posix, sysv, cma, knem, xpmem; the default), posix, sysv, cma or tcp"},
    {"--json", "a file path in an existing, writable directory"},
    {"--junit", "a file path in an existing, writable directory"},
    {"--output", "a file path in an existing, writable directory"},
    {"--verdict-file", "a file path in an existing, writable directory"},
    {"--device", "INDEX, deviceUUID (32 hex digits) or NAME-SUBSTRING"},
    {"--require", "comma-separated row names"},
    {"--require-group", "comma-separated group names"},
    {"--expect", "a file path"},
    {"--prometheus", "a file path"},
    {"--ctrf", "a file path"},
};

/// kOptionWords' words for `option`; "" for an option it does not hold.
constexpr const char* accepted_words(std::string_view option) noexcept {
  for (const OptionWords& w : kOptionWords)
    if (option == w.option) return w.accepts;
  return "";
}

/// Every value of each word option, in the order its words list them; to_string()
/// gives each one's word.
inline constexpr Isolation kIsolationValues[] = {Isolation::none, Isolation::route};
inline constexpr FdTransportChoice kFdTransportValues[] = {FdTransportChoice::scm, FdTransportChoice::pidfd,
                                                           FdTransportChoice::both};
inline constexpr GlDriverRequest kGlDriverValues[] = {GlDriverRequest::automatic, GlDriverRequest::system,
                                                      GlDriverRequest::zink, GlDriverRequest::llvmpipe};

/// Version of the --json document; bump on any incompatible change (docs/probe-result.schema.json).
inline constexpr int kJsonSchemaVersion = 1;

/// --expect-transport: the path the UCX rows (T5-ucx-*) must find their bytes on
/// (docs/probe.md, "T5"); bytes on another transport FAIL the row.
enum class ExpectedTransport {
  shm,    ///< any shared-memory transport of UCX: posix, sysv, cma, knem, xpmem (the default)
  posix,  ///< UCX's posix shared memory only
  sysv,   ///< UCX's System V shared memory only
  cma,    ///< cross-memory attach only
  tcp,    ///< tcp: the run means the copying path
};
const char* to_string(ExpectedTransport transport) noexcept;
inline constexpr ExpectedTransport kDefaultExpectTransport = ExpectedTransport::shm;  ///< --expect-transport
inline constexpr ExpectedTransport kExpectedTransportValues[] = {ExpectedTransport::shm, ExpectedTransport::posix,
                                                                 ExpectedTransport::sysv, ExpectedTransport::cma,
                                                                 ExpectedTransport::tcp};

struct ProbeOptions {
  std::size_t size = kDefaultSize;    ///< shared allocation, bytes: multiple of 4096, >= 32768, fits the heap
  bool regions_at_end = false;        ///< region window in the last 8 x 4 KiB
  std::vector<std::string> only;      ///< row names; empty = all
  std::vector<std::string> groups;    ///< --only-GROUP: group names (route_groups()); empty = all
  std::vector<std::string> excluded_groups;  ///< --no-GROUP: groups left out (only those marked excludable: "gles")
  std::chrono::nanoseconds timeout = kDefaultTimeout;  ///< per-route limit, within kTimeoutRange; a soak adds its own time
  std::chrono::nanoseconds soak{0};   ///< --soak: repeat each OK route's round trip this long (kSoakRange); 0 = off
  std::string json_path;              ///< --json=FILE; empty = none
  std::string device;                 ///< --device=INDEX|UUID|NAME-SUBSTRING; empty = first GPU
  bool list_devices = false;          ///< print phase A's device list and stop
  bool measure = false;                ///< --measure: bandwidth/latency figures per round-tripped leg (a second run)
  std::size_t measure_size = kDefaultMeasureSize;  ///< --measure-size: bytes of the measured allocation, 1 MiB..1 GiB, multiple of 4096
  unsigned measure_repeats = kDefaultMeasureRepeats;  ///< --measure-repeats: samples per figure, 1..100 (median and min/max reported)
  MemoryTypeChoice memory_type = kDefaultMemoryType;  ///< --memory-type (exporting rows)
  std::string junit_path;             ///< --junit=FILE; empty = none
  std::string output_path;            ///< --output=FILE: what run() prints goes there instead of `out`, as it goes; empty = none
  std::string verdict_path;           ///< --verdict-file=FILE: run() writes the one verdict line there at the end; empty = none
  unsigned jobs = 0;                  ///< --jobs: routes run side by side, 1..64; 0 = the default, 1 lane (default_jobs)
  Isolation isolate = Isolation::none;  ///< --isolate
  GlDriverRequest gl_driver = kDefaultGlDriver;  ///< --gl-driver
  /// The worker executable: the extmem executable find() starts the route halves from
  /// (`extmem probe --worker`, `--child`). Empty: the one installed beside the library
  /// (find_worker(), extmem/probe/findings.h). The extmem command names itself.
  std::string worker;
  /// --image-size=WxH: texels of the image rows' shared image, each side 1..kMaxImageSide here and at
  /// most the device's maxImageDimension2D (checked after phase A).
  std::uint32_t image_width = kDefaultImageSide, image_height = kDefaultImageSide;
  FdTransportChoice fd_transport = FdTransportChoice::scm;  ///< --fd-transport
  ExpectedTransport expect_transport = kDefaultExpectTransport;  ///< --expect-transport
  /// --peer=ENDPOINT: run one half of every route in `extmem probe serve` listening
  /// there (a socket path, @NAME or tcp:HOST:PORT; extmem/os/endpoint.h, docs/serve.md); empty = none.
  std::string peer;
  // Fleet options (docs/fleet.md).
  std::vector<std::string> require;         ///< --require: row or run names that must be OK; the exit then follows them
  std::vector<std::string> require_groups;  ///< --require-group: groups (route_groups()) whose rows must be OK
  std::string expect_path;                  ///< --expect=FILE: baseline of expected statuses; empty = none
  bool npd = false;                         ///< --npd: node-problem-detector plugin mode (one line, exit 0/1/2)
  std::string prometheus_path;              ///< --prometheus=FILE: node_exporter textfile; empty = none
  std::string ctrf_path;                    ///< --ctrf=FILE: CTRF JSON report; empty = none
};

/// Suffix of a row's twin whose fds cross by pidfd_getfd (--fd-transport).
inline constexpr std::string_view kPidfdSuffix = "@pidfd";

/// The largest --image-size side validate() accepts before any device is known (texels);
/// the device's maxImageDimension2D then bounds it further.
inline constexpr std::uint32_t kMaxImageSide = 65536;

/// Suffix of a row that exported from memory type `index` (--memory-type): "@mt<index>".
std::string memory_type_suffix(unsigned index);

/// Names of every row, in print order.
std::vector<std::string> row_names();

/// Checks option values that need no driver, the one place they are checked:
/// size shape, timeout and soak ranges, row and group names, --jobs 0..64 (0 =
/// the default), --memory-type's form, measure size and repeats, the
/// JSON, JUnit, output and verdict files can be created (nothing is left behind), --gl-driver is a known name. Errors: invalid_argument, step = the
/// option name, detail = what was wrong and what is accepted.
Status validate(const ProbeOptions& options);

/// What `extmem probe` does: find() (extmem/probe/findings.h) with the text
/// writer streaming phase A and the RESULT lines as rows finish, then the
/// summary table, the JSON and the JUnit files (extmem/probe/write.h). Text goes
/// to `out`, problems of the probe itself to `err` ("extmem probe: <option>:
/// <what is accepted>"). With `output_path`, the text goes to that file
/// instead, flushed after phase A and every row, and problems go to both; the
/// file is created only after validate() accepted the options. With
/// `verdict_path`, the verdict line (write.h, verdict_line()) is written there
/// atomically at the end of every run that passed validate(). A file that
/// cannot be created is kExitUsage; one that cannot be written at the end is
/// kExitCannotRun. Returns an ExitCode. Never throws; a child that crashes,
/// hangs or sends garbage makes its row FAIL.
int run(const ProbeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace extmem::probe
