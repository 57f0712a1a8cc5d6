// find_worker(): which executable find() starts its route halves from. Never the
// caller itself unless it names itself: a program that links the library and
// calls find() must not find itself re-executed as `probe --worker`.
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "extmem/probe/findings.h"
#include "extmem/probe/probe.h"
#include "probe/install_dirs.h"  // generated from cmake/install_dirs.h.in

namespace extmem::probe {
namespace {

constexpr const char* kStep = "find the worker executable";

struct Looked {
  std::string path, why;  // where, and what was wrong there
  int errnum = 0;
};

// 0 when `path` is an executable regular file, else the errno that says why not.
int unusable(const std::string& path, std::string& why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    why = e == ENOENT ? "no such file" : errno_code(e);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
    return EACCES;
  }
  if (::access(path.c_str(), X_OK) != 0) {
    const int e = errno;
    why = "not executable (" + errno_code(e) + ")";
    return e;
  }
  return 0;
}

// The directory of the shared object this code is in; "" when it is linked into
// the program itself (the static libextmem.a): a static library has no place of its own.
std::string shared_library_dir() {
  Dl_info info{};
  link_map* map = nullptr;
  if (::dladdr1(reinterpret_cast<void*>(&find_worker), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr || map->l_name == nullptr || map->l_name[0] == '\0')  // the main program's l_name is ""
    return {};
  return std::filesystem::path(map->l_name).parent_path().string();
}

// Beside the library, in the order looked at: the shared library's own bindir,
// then where this build installs (cmake --install) and where the .deb does.
std::vector<std::string> installed_worker_candidates() {
  std::vector<std::string> out;
  auto add = [&](const std::filesystem::path& dir) {
    const std::string p = (dir / "extmem").lexically_normal().string();
    for (const std::string& seen : out)
      if (seen == p) return;
    out.push_back(p);
  };
  if (const std::string dir = shared_library_dir(); !dir.empty())
    add(std::filesystem::path(dir) / install_dirs::kLibdirToBindir);
  add(install_dirs::kBindir);
  add(install_dirs::kPackageBindir);
  return out;
}

}  // namespace

Result<std::string> find_worker(const ProbeOptions& options) {
  std::vector<Looked> looked;
  const bool named = !options.worker.empty();
  const std::vector<std::string> candidates = named ? std::vector<std::string>{options.worker} : installed_worker_candidates();
  for (const std::string& path : candidates) {
    Looked l{path, {}, 0};
    l.errnum = unusable(path, l.why);
    if (l.errnum == 0) return path;
    looked.push_back(std::move(l));
  }
  std::string where;
  for (const Looked& l : looked) where += fmt::format("{}{}: {}", where.empty() ? "" : "; ", l.path, l.why);
  const std::string detail =
      named ? fmt::format("looked for the worker executable ProbeOptions::worker names: {}", where)
            : fmt::format("looked for the extmem executable installed beside the library: {}; install extmem, or name "
                          "the worker executable in ProbeOptions::worker",
                          where);
  return os_error(kStep, looked.back().errnum, detail);
}

}  // namespace extmem::probe
