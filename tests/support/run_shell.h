// Running the real extmem binary through the shell from a test, stdout and
// stderr captured together; shared by the tests that only need the text and
// the exit code.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace extmem::test {

struct ShellRun {
  std::string out;  ///< stdout and stderr, interleaved
  int code = -1;    ///< exit status, or -1 when killed by a signal
};

/// `command` through sh -c (ours, not user text), stderr joined to stdout.
inline ShellRun run_shell(const std::string& command) {
  ShellRun r;
  const std::string cmd = command + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// EXTMEM_BINARY with `args` (shell words, ours, not user text), `env`
/// (KEY=VALUE ..., or empty) prepended through env(1).
inline ShellRun run_extmem(const std::string& args, const std::string& env = {}) {
  return run_shell((env.empty() ? "" : "env " + env + " ") + std::string(EXTMEM_BINARY) + " " + args);
}

}  // namespace extmem::test
