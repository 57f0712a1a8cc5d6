// `extmem probe serve` in the background of a test: started through the shell
// with its output in a file, waited for until it serves, stopped at the end.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "extmem/os/child.h"
#include "temp_files.h"

namespace extmem::test {

struct ServeProcess {
  TempDir dir;  // holds the socket, the output and the server's document
  os::ChildProcess child;

  /// Where it listens: `--endpoint` as given (set `at` before start(); default <dir>/sock).
  std::string at;
  std::string endpoint() const { return at.empty() ? dir.file("sock") : at; }
  /// The endpoint its "== serving on" line names (a tcp: port 0 resolved), or "".
  std::string serving_on() const {
    const std::string out = output(), head = "== serving on ";
    const std::size_t from = out.find(head);
    if (from == std::string::npos) return {};
    const std::size_t begin = from + head.size();
    return out.substr(begin, out.find(": the ", begin) - begin);
  }
  std::string output() const { return slurp(dir.path / "serve.out"); }

  /// Starts `extmem probe serve --endpoint=ENDPOINT ARGS` with `env` (KEY=VALUE ...)
  /// and waits at most `wait_s` for it to say it serves. The directory is made
  /// traversable (0755) so a peer of another uid can reach the socket when the
  /// server lets it. Returns whether it serves.
  bool start(const std::string& args, const std::string& env = {}, double wait_s = 180) {
    ::chmod(dir.path.c_str(), 0755);
    const std::string cmd = "exec " + (env.empty() ? "" : "env " + env + " ") + std::string(EXTMEM_BINARY) +
                            " probe serve --endpoint=" + endpoint() + " " + args + " >" + dir.file("serve.out") + " 2>&1";
    auto c = os::ChildProcess::spawn("/bin/sh", {"sh", "-c", cmd}, {});
    if (!c) return false;
    child = std::move(*c);
    return wait_for("== serving on", wait_s);
  }

  /// Whether the output holds `text` within `wait_s` (false at once when the server exited).
  bool wait_for(const std::string& text, double wait_s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    while (std::chrono::steady_clock::now() < until) {
      if (output().find(text) != std::string::npos) return true;
      if (child.pid() > 0 && child.wait(0)) return output().find(text) != std::string::npos;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  /// Waits at most `wait_s` for the server to exit by itself; kills it otherwise.
  os::ExitInfo finish(double wait_s) {
    if (child.pid() <= 0) return {};
    auto info = child.wait(static_cast<int>(wait_s * 1000));
    return info ? *info : child.kill_and_reap();
  }
  ~ServeProcess() {
    if (child.pid() > 0) child.kill_and_reap();
  }
};

}  // namespace extmem::test
