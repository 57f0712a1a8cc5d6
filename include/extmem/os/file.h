// Output files that are either whole or absent.
#pragma once

#include <string>
#include <string_view>

#include "extmem/core/error.h"

namespace extmem::os {

/// Writes `text` to `path` through `path`.tmp and rename(2), so a reader never
/// sees half a file; on failure the temporary file is removed and `path` is
/// untouched. Errors: os_error("open|write|rename …", errno).
Status write_file_atomically(const std::string& path, std::string_view text);

/// Why an output `path` written only at the end of a run could not be created
/// (a directory, or `path`.tmp cannot be created there), with what is
/// accepted; empty when it can. Leaves nothing behind.
std::string creatable_problem(const std::string& path);

}  // namespace extmem::os
