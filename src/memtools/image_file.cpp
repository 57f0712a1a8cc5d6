#include "memtools/image_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace extmem::memtools::detail {

Result<ImageFile> open_image(const std::string& path, bool writable) {
  ImageFile image;
  image.fd = os::UniqueFd(::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!image.fd.valid()) return os_error("open " + path, errno);
  struct stat st {};
  if (::fstat(image.fd.get(), &st) != 0) return os_error("fstat " + path, errno);
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
    return Error{"open " + path, ErrorKind::invalid_argument, {}, "not a regular file or block device"};
  const int flags = ::fcntl(image.fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(image.fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) return os_error("fcntl " + path, errno);
  image.size = static_cast<std::uint64_t>(st.st_size);
  if (S_ISBLK(st.st_mode)) {
    const off_t end = ::lseek(image.fd.get(), 0, SEEK_END);
    if (end < 0) return os_error("lseek(SEEK_END) " + path, errno);
    image.size = static_cast<std::uint64_t>(end);
  }
  return image;
}

}  // namespace extmem::memtools::detail
