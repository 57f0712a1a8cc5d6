#include "extmem/os/fd.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdint>

namespace extmem::os {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<UniqueFd> dup_fd(int fd) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return os_error("dup", errno);
  return UniqueFd(copy);
}

bool fd_is_open(int fd) noexcept { return fd >= 0 && ::fcntl(fd, F_GETFD) != -1; }

std::size_t count_open_fds() {
  std::size_t n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n;
}

Result<std::size_t> fd_size(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_error("fstat", errno);
  if (st.st_size > 0) return static_cast<std::size_t>(st.st_size);
  // dma-bufs report st_size 0 on older kernels; their size is only visible through lseek.
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) return os_error("lseek(SEEK_END)", errno);
  ::lseek(fd, 0, SEEK_SET);
  return static_cast<std::size_t>(end);
}

std::string fd_target(int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char buf[256];
  ssize_t n = ::readlink(link, buf, sizeof buf - 1);
  if (n < 0) return "?";
  return std::string(buf, static_cast<std::size_t>(n));
}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (addr_ != nullptr) ::munmap(addr_, size_);
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Mapping::~Mapping() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
}

Result<Mapping> Mapping::map(int fd, std::size_t size, int flags, std::size_t offset) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) return os_error("mmap", errno);
  Mapping m;
  m.addr_ = p;
  m.size_ = size;
  return m;
}

Result<Mapping> Mapping::map_aligned(int fd, std::size_t size, std::size_t alignment) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (alignment < page || (alignment & (alignment - 1)) != 0)
    return Error{"map_aligned", ErrorKind::invalid_argument, {}, "alignment must be a power of two >= the page size"};
  // Reserve enough address space to find an aligned start, map the fd over it, drop the rest.
  const std::size_t span = size + alignment;
  void* reserve = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserve == MAP_FAILED) return os_error("mmap(reserve)", errno);
  auto base = reinterpret_cast<std::uintptr_t>(reserve);
  std::uintptr_t aligned = (base + alignment - 1) & ~(static_cast<std::uintptr_t>(alignment) - 1);
  const int kind = fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED;
  void* p = ::mmap(reinterpret_cast<void*>(aligned), size, PROT_READ | PROT_WRITE, kind | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    ::munmap(reserve, span);
    return os_error("mmap", err);
  }
  if (aligned > base) ::munmap(reserve, aligned - base);
  std::uintptr_t end = aligned + size, reserve_end = base + span;
  if (reserve_end > end) ::munmap(reinterpret_cast<void*>(end), reserve_end - end);
  Mapping m;
  m.addr_ = p;
  m.size_ = size;
  return m;
}

Result<Mapping> Mapping::anonymous(std::size_t size) {
  return map(-1, size, MAP_PRIVATE | MAP_ANONYMOUS);
}

Result<UniqueFd> create_memfd(const char* name, std::size_t size) {
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd.valid()) return os_error("memfd_create", errno);
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return os_error("ftruncate", errno);
  return fd;
}

}  // namespace extmem::os
