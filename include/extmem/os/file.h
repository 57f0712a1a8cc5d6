// Output files that are either whole or absent, and input files read whole to a bound.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "extmem/core/error.h"

namespace extmem::os {

/// Writes `text` to `path` through `path`.tmp and rename(2), so a reader never
/// sees half a file; on failure the temporary file is removed and `path` is
/// untouched. A symlink keeps pointing where it did: its target is replaced.
/// An existing character device or FIFO (/dev/stdout, /dev/null) is written in
/// place, never renamed over. Errors: os_error("open|write|rename …", errno);
/// invalid_argument for any other existing non-regular file (block device, socket).
Status write_file_atomically(const std::string& path, std::string_view text);

/// Why an output `path` written only at the end of a run could not be created
/// (an empty path, a directory, a block device or socket, a character device or FIFO this
/// process may not write, or `path`.tmp cannot be created there), with what is
/// accepted; empty when it can. Leaves nothing behind.
std::string creatable_problem(const std::string& path);

/// Whether `a` and `b` name one existing file (the same device and inode, links
/// and other spellings included); false when either does not exist.
bool same_file(const std::string& a, const std::string& b) noexcept;

/// Reads the whole input file `path`: a regular file, or a pipe, FIFO or
/// character device read until its end (`<(cmd)`, /dev/stdin), so opening a FIFO
/// waits for its writer, as cat(1) does. Never holds more than `max_bytes` + 4 KiB:
/// a longer input (/dev/zero) is refused. Errors: os_error("read PATH", errno):
/// ENOENT, EACCES, EISDIR for a directory; invalid_argument (step "read PATH")
/// when it holds more than `max_bytes` bytes.
Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes);

}  // namespace extmem::os
