// `extmem probe serve`: option parsing only; the work is extmem::probe::serve().
#include "cli/probe_serve.h"

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/duration_option.h"
#include "extmem/probe/serve.h"

namespace extmem::cli {

std::function<int()> add_probe_serve(CLI::App* probe, CLI::App** serve) {
  auto o = std::make_shared<probe::ServeOptions>();
  auto role = std::make_shared<std::string>(probe::to_string(o->role));
  auto gl = std::make_shared<std::string>(probe::to_string(o->gl_driver));
  CLI::App* cmd = probe->add_subcommand(
      "serve", "Serve one half of every route to driving peers (extmem probe --peer=ENDPOINT) across a boundary");
  *serve = cmd;
  cmd->add_option("--endpoint", o->endpoint,
                  "Where to listen: a socket path (mode 0600), @NAME (abstract socket) or tcp:HOST:PORT (loopback; bytes "
                  "only, no fds; port 0: the kernel chooses)")
      ->type_name("ENDPOINT")
      ->required();
  cmd->add_option("--serve-role", *role, "The halves served: server (the exporting halves) or client")
      ->check(CLI::IsMember({"server", "client"}))
      ->capture_default_str();
  cmd->add_option("--sessions", o->sessions, "Sessions to serve, then exit; 0: until stopped")
      ->check(CLI::Range(0u, 1000000u))
      ->capture_default_str();
  cmd->add_option("--allow-uid", o->allow_uids, "Uids whose sessions are served (default: this process's uid)")
      ->delimiter(',')
      ->type_name("UID[,UID...]");
  cmd->add_option("--allow-group", o->allow_group, "Make the socket file group GROUP, mode 0660 (default: 0600)")
      ->type_name("GROUP");
  cmd->add_flag("--listen-any", o->listen_any,
                "tcp: may bind a non-loopback address and serves peers nothing identifies (other hosts, network "
                "namespaces: no uid to check)");
  cmd->add_option("--max-size", o->max_size,
                  fmt::format("Largest allocation a job may ask for, bytes (default: {:g} of MemAvailable)",
                              probe::kDefaultMaxSizeFraction))
      ->type_name("BYTES")
      ->check([](const std::string& v) {  // before CLI11's conversion, which would wrap "-4096" around
        // 0 is the option's absence inside ServeOptions: given, it is refused, not read as the default.
        return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos && v.find_first_not_of('0') != std::string::npos
                   ? std::string()
                   : "\"" + v + "\" is not accepted: a whole number of bytes, a multiple of 4096 from 32768";
      });
  add_duration_option(*cmd, "--idle-timeout", o->idle_timeout, "A session that sends nothing this long ends",
                      probe::kIdleTimeoutRange);
  add_duration_option(*cmd, "--timeout", o->timeout, "One half's limit; a job's soak is added", probe::kTimeoutRange);
  cmd->add_option("--device", o->device, "Physical device: INDEX, deviceUUID or NAME-SUBSTRING (default: first GPU)");
  cmd->add_option("--gl-driver", *gl, "GL for the GLES halves: auto, system, zink or llvmpipe")
      ->check(CLI::IsMember({"auto", "system", "zink", "llvmpipe"}))
      ->capture_default_str();
  cmd->add_option("--json", o->json_path, "Write this side's document (sessions, peers, boundaries), after each session")
      ->type_name("FILE");
  return [o, role, gl]() {
    o->role = *role == "client" ? probe::ServeRole::client : probe::ServeRole::server;
    for (probe::GlDriverRequest r : {probe::GlDriverRequest::automatic, probe::GlDriverRequest::system,
                                     probe::GlDriverRequest::zink, probe::GlDriverRequest::llvmpipe})
      if (*gl == probe::to_string(r)) o->gl_driver = r;
    o->worker = "/proc/self/exe";  // this command is the worker executable
    return probe::serve(*o, std::cout, std::cerr);
  };
}

}  // namespace extmem::cli
