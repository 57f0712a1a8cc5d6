#include "extmem/os/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "extmem/os/fd.h"

namespace extmem::os {

namespace {

Status write_all(int fd, std::string_view text, const std::string& name) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error("write " + name, errno);
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

// Where the bytes for `path` really go: the file a symlink names (so the link
// survives the rename), else `path` itself.
std::string rename_target(const std::string& path) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) return path;
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;  // a dangling link is replaced like a missing file
  std::string out(real);
  std::free(real);
  return out;
}

}  // namespace

Status write_file_atomically(const std::string& path, std::string_view text) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A character device or FIFO (/dev/stdout, /dev/null, a pipe) is written in
    // place: renaming over it would replace the device node with a plain file.
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      UniqueFd out(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
      if (!out.valid()) return os_error("open " + path, errno);
      return write_all(out.get(), text, path);
    }
    return Error{"open " + path, ErrorKind::invalid_argument, {},
                 "not a regular file, character device or FIFO; accepted: a file path in an existing, writable directory"};
  }
  const std::string target = rename_target(path);
  const std::string tmp = target + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return os_error("open " + tmp, errno);
  if (Status w = write_all(fd.get(), text, tmp); !w) {
    ::unlink(tmp.c_str());
    return w;
  }
  fd.reset();
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return os_error("rename " + tmp + " to " + target, err);
  }
  return {};
}

std::string creatable_problem(const std::string& path) {
  if (path.empty()) return "the path is empty; accepted: a file path in an existing, writable directory";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return fmt::format("{} is a directory; accepted: a file path in an existing, writable directory", path);
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
      return fmt::format("{} is not a regular file, character device or FIFO; accepted: a file path in an existing, "
                         "writable directory", path);
    if (::access(path.c_str(), W_OK) != 0)
      return fmt::format("cannot write {}: {}; accepted: a file path in an existing, writable directory", path,
                         errno_code(errno));
    return {};
  }
  const std::string tmp = rename_target(path) + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid())
    return fmt::format("cannot create {}: {}; accepted: a file path in an existing, writable directory", tmp,
                       errno_code(errno));
  ::unlink(tmp.c_str());
  return {};
}

bool same_file(const std::string& a, const std::string& b) noexcept {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes) {
  const std::string step = "read " + path;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return os_error(step, errno);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return os_error(step, errno);  // EISDIR for a directory
    if (got == 0) return text;
    text.append(buf, static_cast<std::size_t>(got));
    if (text.size() > max_bytes)
      return Error{step, ErrorKind::invalid_argument, {},
                   fmt::format("more than {} bytes (an endless device such as /dev/zero?): not an input of this kind",
                               max_bytes)};
  }
}

}  // namespace extmem::os
