// Owned file descriptors and mappings.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "extmem/core/error.h"

namespace extmem::os {

/// Owns one file descriptor; closes it on destruction. Move-only. -1 means empty.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  /// Gives up ownership (e.g. after a Vulkan/GL import consumed the fd) and returns it.
  int release() noexcept { return std::exchange(fd_, -1); }
  /// Closes the owned fd (if any) and takes `fd`.
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

/// dup(fd) with O_CLOEXEC. Errors: os_error("dup", errno).
Result<UniqueFd> dup_fd(int fd);

/// Whether `fd` is open in this process (fcntl(F_GETFD) succeeds).
bool fd_is_open(int fd) noexcept;

/// Number of entries in /proc/self/fd (includes the directory fd used to count it).
std::size_t count_open_fds();

/// Size of what `fd` refers to, in bytes, from fstat (lseek(SEEK_END) when st_size is 0).
/// Errors: os_error("fstat"|"lseek(SEEK_END)"); ESPIPE means the object has no
/// size to report (e.g. NVIDIA's opaque fds), not that it is broken.
Result<std::size_t> fd_size(int fd);

/// What the fd is, from readlink(/proc/self/fd/N): "/memfd:name (deleted)",
/// "/dev/nvidiactl", "anon_inode:dmabuf", ... ; "?" when unreadable.
std::string fd_target(int fd);

/// Owns one mmap()ed range; munmap on destruction. Move-only.
class Mapping {
 public:
  Mapping() = default;
  Mapping(Mapping&& other) noexcept
      : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  /// mmap(NULL, size, PROT_READ|PROT_WRITE, flags, fd, offset). `size` and
  /// `offset` in bytes; offset must be page-aligned. The fd stays owned by the
  /// caller (the mapping keeps the object alive). Errors: os_error("mmap", errno).
  static Result<Mapping> map(int fd, std::size_t size, int flags, std::size_t offset = 0);
  /// MAP_SHARED mapping of `size` bytes of `fd` at an address aligned to
  /// `alignment` bytes (a power of two, at least the page size), as
  /// VK_EXT_external_memory_host needs; fd -1 gives anonymous MAP_PRIVATE memory.
  /// Errors: invalid_argument, os_error("mmap").
  static Result<Mapping> map_aligned(int fd, std::size_t size, std::size_t alignment);
  /// Anonymous private mapping of `size` bytes. Errors: os_error("mmap", errno).
  static Result<Mapping> anonymous(std::size_t size);

  std::byte* data() const noexcept { return static_cast<std::byte*>(addr_); }
  std::size_t size() const noexcept { return size_; }
  std::span<std::byte> bytes() const noexcept { return {data(), size_}; }

 private:
  void* addr_ = nullptr;
  std::size_t size_ = 0;
};

/// memfd_create(name, MFD_CLOEXEC) + ftruncate(size bytes).
/// Errors: os_error("memfd_create"|"ftruncate", errno).
Result<UniqueFd> create_memfd(const char* name, std::size_t size);

}  // namespace extmem::os
