#include "probe/parent/runtime_dir.h"

#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>

#include <fmt/format.h>

namespace extmem::probe {
namespace {

// The private runtime directory's path for the signal handler below: a fixed
// buffer, since a handler may only call async-signal-safe functions (rmdir, getpid).
char g_runtime_dir[PATH_MAX];
pid_t g_runtime_dir_owner = 0;

// The signals that end a run from outside (^C, kill, a closed terminal): with
// their default action the process would die before ~PrivateRuntimeDir runs.
constexpr int kEndingSignals[] = {SIGINT, SIGTERM, SIGHUP};
static_assert(std::size(kEndingSignals) == 3, "PrivateRuntimeDir::installed_ has one flag per signal");

// Removes the directory (only in the process that made it: a child between fork
// and exec runs this handler too) and dies of the same signal, as it would have.
void remove_runtime_dir_and_reraise(int sig) {
  if (::getpid() == g_runtime_dir_owner) ::rmdir(g_runtime_dir);
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns: the default action, death by `sig`
}


}  // namespace

PrivateRuntimeDir::PrivateRuntimeDir() {
  const char* value = std::getenv("XDG_RUNTIME_DIR");
  std::error_code ec;
  if (value != nullptr && value[0] == '/' && std::filesystem::is_directory(value, ec)) return;
  if (value != nullptr) was_ = value;
  std::string path = (std::filesystem::temp_directory_path(ec) / "extmem-runtime-XXXXXX").string();
  if (ec || path.size() >= sizeof g_runtime_dir) return;  // then the drivers complain as before; nothing depends on it
  if (::mkdtemp(path.data()) == nullptr) return;
  dir_ = path;
  ::setenv("XDG_RUNTIME_DIR", dir_.c_str(), 1);
  remove_on_ending_signals();
}

PrivateRuntimeDir::~PrivateRuntimeDir() {
  if (dir_.empty()) return;
  restore_signals();
  if (was_) ::setenv("XDG_RUNTIME_DIR", was_->c_str(), 1);
  else ::unsetenv("XDG_RUNTIME_DIR");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void PrivateRuntimeDir::describe(RunContext& c) const {
  if (dir_.empty()) return;
  c.private_runtime_dir = dir_;
  c.runtime_dir_was = was_ ? fmt::format("\"{}\" is not an absolute path to a directory", *was_) : "unset";
}

void PrivateRuntimeDir::remove_on_ending_signals() {
  std::memcpy(g_runtime_dir, dir_.c_str(), dir_.size() + 1);
  g_runtime_dir_owner = ::getpid();
  struct sigaction ours {};
  ours.sa_handler = remove_runtime_dir_and_reraise;
  ::sigemptyset(&ours.sa_mask);
  for (std::size_t i = 0; i < std::size(kEndingSignals); ++i) {
    struct sigaction before {};
    if (::sigaction(kEndingSignals[i], nullptr, &before) != 0 || before.sa_handler != SIG_DFL) continue;
    installed_[i] = ::sigaction(kEndingSignals[i], &ours, nullptr) == 0;
  }
}

void PrivateRuntimeDir::restore_signals() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  for (std::size_t i = 0; i < std::size(kEndingSignals); ++i) {
    struct sigaction now {};
    // Left alone when the caller has set its own since.
    if (installed_[i] && ::sigaction(kEndingSignals[i], nullptr, &now) == 0 &&
        now.sa_handler == remove_runtime_dir_and_reraise)
      ::sigaction(kEndingSignals[i], &dfl, nullptr);
  }
}

}  // namespace extmem::probe
