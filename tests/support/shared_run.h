// One expensive run (a whole probe run, a --measure run) shared by the test
// processes of one ctest invocation.
//
// ctest runs each GoogleTest suite in a process of its own
// (tests/gtest_suites.cmake.in), so a function-local static "shared by the tests
// that read its output" would be made again in each suite that reads it.
// With EXTMEM_TEST_SHARED_DIR set (tests/CMakeLists.txt sets it for every test,
// and the fixture test `tests.shared_runs.clear` empties it before any runs),
// the first process to ask for a key makes the run into <dir>/<key>/ while it
// holds an exclusive flock on <dir>/<key>.lock, then marks it complete; every
// later process of that invocation reads the same files. A process killed while
// making it leaves no mark (its lock dies with it), so the next one makes it
// again. Unset (the test binary run by hand), every process makes its own in a
// temporary directory, as before.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "temp_files.h"

namespace extmem::test {

/// The directory holding run `key` (letters, digits, '-', '_', '.'), made by
/// `make(dir)` in this process or, under ctest, by the first test process of the
/// invocation that asked. `make` writes everything the tests read into `dir`
/// (which exists and is empty when it is called). Returns the directory's path;
/// an empty string when the shared directory cannot be created or locked.
inline std::string shared_run_dir(const std::string& key, const std::function<void(const std::string& dir)>& make) {
  const char* root = std::getenv("EXTMEM_TEST_SHARED_DIR");
  if (root == nullptr || *root == '\0') {
    // Kept until the process exits, like the function-local statics that call this.
    static std::vector<std::unique_ptr<TempDir>> own;
    own.push_back(std::make_unique<TempDir>());
    const std::string dir = own.back()->path.string();
    make(dir);
    return dir;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(root, ec);
  const fs::path dir = fs::path(root) / key, done = fs::path(root) / (key + ".done"), lock = fs::path(root) / (key + ".lock");
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
    if (fd >= 0) ::close(fd);
    return {};
  }
  if (!fs::exists(done)) {
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    make(dir.string());
    std::ofstream(done.string()) << "complete\n";
  }
  ::close(fd);  // releases the flock
  return dir.string();
}

}  // namespace extmem::test
