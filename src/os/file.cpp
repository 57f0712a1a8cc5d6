#include "extmem/os/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "extmem/os/fd.h"

namespace extmem::os {

Status write_file_atomically(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return os_error("open " + tmp, errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::unlink(tmp.c_str());
      return os_error("write " + tmp, err);
    }
    done += static_cast<std::size_t>(n);
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return os_error("rename " + tmp + " to " + path, err);
  }
  return {};
}

std::string creatable_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return fmt::format("{} is a directory; accepted: a file path in an existing, writable directory", path);
  const std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid())
    return fmt::format("cannot create {}: {}; accepted: a file path in an existing, writable directory", tmp,
                       errno_code(errno));
  ::unlink(tmp.c_str());
  return {};
}

}  // namespace extmem::os
