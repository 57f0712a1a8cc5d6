// `extmem probe serve`: the serving side of a probe run across a boundary
// (docs/serve.md). It starts its drivers once, listens on an endpoint, and for
// each session of a driving peer (`extmem probe --peer=ENDPOINT`) runs one half of
// every route the peer sends, relaying that half's steps and report. It is meant
// to be left running beside a real server: it checks who connects, serves one
// peer at a time, bounds what it reads and what a peer may make it allocate, and
// releases everything a session held before the next.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/probe/probe.h"

namespace extmem::probe {

/// --serve-role: the halves the serving side runs.
enum class ServeRole {
  server,  ///< the allocating, exporting halves (the default: a render server exports)
  client,  ///< the importing halves
};
const char* to_string(ServeRole role) noexcept;

/// Bounds of --idle-timeout: 1 s to 1 h.
inline constexpr DurationRange kIdleTimeoutRange{std::chrono::seconds(1), std::chrono::hours(1)};
inline constexpr std::chrono::seconds kDefaultIdleTimeout{120};  ///< --idle-timeout
/// --max-size's default: this fraction of MemAvailable (/proc/meminfo) when serve starts.
inline constexpr double kDefaultMaxSizeFraction = 0.25;

struct ServeOptions {
  std::string endpoint;                 ///< --endpoint: a socket path, @NAME or tcp:HOST:PORT (extmem/os/endpoint.h); required
  ServeRole role = ServeRole::server;   ///< --serve-role
  unsigned sessions = 1;                ///< --sessions: sessions to serve, then exit 0; 0 = until stopped
  /// --allow-uid: the uids whose sessions are served (SO_PEERCRED); empty = only this process's uid.
  std::vector<std::uint32_t> allow_uids;
  std::string allow_group;              ///< --allow-group: the socket file's group (mode 0660); empty = mode 0600
  /// --listen-any: a tcp: endpoint may bind a non-loopback address, and peers
  /// nothing identifies (another host or network namespace: no uid to check) are served.
  bool listen_any = false;
  std::uint64_t max_size = 0;           ///< --max-size: largest allocation a job may ask for, bytes; 0 = kDefaultMaxSizeFraction of MemAvailable
  std::chrono::nanoseconds idle_timeout = kDefaultIdleTimeout;  ///< --idle-timeout: a session silent this long ends
  std::chrono::nanoseconds timeout = kDefaultTimeout;  ///< --timeout: one half's limit (its job's soak is added)
  std::string device;                   ///< --device, as for extmem probe; empty = first GPU
  GlDriverRequest gl_driver = kDefaultGlDriver;  ///< --gl-driver
  std::string json_path;                ///< --json=FILE: the serving side's own document, rewritten after each session
  std::string worker;                   ///< the worker executable, as ProbeOptions::worker
};

/// Checks the options: an endpoint parse_endpoint() accepts, durations within
/// their ranges, --max-size a multiple of 4096 of at least 32768 when given, an
/// --allow-group that names a group (not with tcp:, which has no socket file),
/// --listen-any only with tcp:, a --json file that can be created. Errors:
/// invalid_argument, step the option, detail what was wrong and what is accepted.
Status validate(const ServeOptions& options);

/// Runs the serving side: phase A (printed as extmem probe prints it), then one
/// line per session and per refused peer on `out`, until `sessions` sessions were
/// served. A refused peer (uid not allowed, another session running, a wrong
/// protocol, a malformed frame, a job above --max-size or for the other role) is
/// told why in a refusal frame and does not count as a session; the server keeps
/// serving. SIGINT, SIGTERM or SIGHUP stop it at its next wait: the session in
/// progress ends (a half it runs is killed, the peer told), the socket file, the
/// workers and the private runtime directory are released, and it returns kExitOk.
/// Returns kExitOk, kExitUsage (validate()), or kExitCannotRun (the
/// endpoint cannot be bound, no worker executable, no Vulkan device, a worker
/// cannot be started). Problems of serve itself go to `err`. Never throws.
int serve(const ServeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace extmem::probe
