// A scratch directory per test and whole-file reads, for tests that hand files
// to the real binary and read back what it wrote.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace extmem::test {

/// The whole file as bytes; empty when it cannot be read.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A fresh directory under /tmp (mkdtemp, mode 0700), removed with everything
/// in it on destruction. Not copyable: one owner removes it once.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/extmem-test-XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// `name` inside the directory, as a string for command lines.
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace extmem::test
