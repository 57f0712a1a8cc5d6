// Private to memtools: opening a memory image (a RAM dump, a guest's memory
// file, a block device) that the tools read at offsets.
#pragma once

#include <cstdint>
#include <string>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"

namespace extmem::memtools::detail {

/// An open image and its size in bytes (a block device's from lseek(SEEK_END)).
struct ImageFile {
  os::UniqueFd fd;  ///< owned; blocking, close-on-exec
  std::uint64_t size = 0;
};

/// Opens `path` read-only (`writable`: read-write) as an image: a regular file or
/// a block device. Opened with O_NONBLOCK, so a FIFO nobody writes is refused
/// rather than waited on. Errors: os_error("open|fstat|fcntl|lseek(SEEK_END) PATH", errno);
/// invalid_argument (step "open PATH") for anything else (a directory, a FIFO, a
/// character device such as /dev/zero: they have no offsets to read at).
Result<ImageFile> open_image(const std::string& path, bool writable = false);

}  // namespace extmem::memtools::detail
