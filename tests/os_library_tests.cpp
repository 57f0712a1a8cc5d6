// Tests of extmem/os/library.h: pinning the loaded libraries while another thread
// loads and unloads one.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "extmem/os/child.h"
#include "extmem/os/library.h"

namespace {

namespace fs = std::filesystem;

// In a child process: one thread loads and unloads 300 copies of a library (each
// copy a library of its own, so each dlclose unmaps it under the loader's locks)
// while this thread pins every loaded library again and again. Exit 0 once the
// loads are done; a deadlock is ended by SIGALRM after a minute (the loads take
// well under a second).
[[noreturn]] void pin_beside_unloads(const std::vector<std::string>& copies) {
  ::alarm(60);
  std::atomic<bool> done{false};
  std::thread churn([&] {
    for (const std::string& c : copies) {
      if (void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) ::dlclose(h);
    }
    done = true;
  });
  while (!done) extmem::os::pin_loaded_libraries();
  churn.join();
  std::_Exit(0);
}

// Phase A closes a Vulkan instance (which pins the loaded libraries in sanitizer
// builds) on one thread while EGL starts on another, and Mesa 25's EGL start-up
// unloads a Vulkan driver. Pinning used to dlopen from inside dl_iterate_phdr:
// the reverse lock order of dlclose, and both threads hung (Debian 13, the
// Modes/GlesProbe tests). In other builds pinning does nothing and this passes
// trivially; CI's build is a sanitizer build.
TEST(OsLibrary, PinningBesideAThreadThatUnloadsLibrariesFinishes) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("extmem-pin-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::string> copies;
  for (int i = 0; i < 300; ++i) {
    const fs::path copy = dir / ("copy" + std::to_string(i) + ".so");
    fs::copy_file(EXTMEM_FAKE_CUDA_LIBRARY, copy, fs::copy_options::overwrite_existing);
    copies.push_back(copy.string());
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) pin_beside_unloads(copies);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  fs::remove_all(dir);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child " << extmem::os::decode_wait_status(status).describe()
      << " (SIGALRM: pin_loaded_libraries and another thread's dlclose deadlocked)";
}

}  // namespace
