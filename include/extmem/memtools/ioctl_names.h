// ioctl request numbers split into their _IOC fields and named from tables of
// the request families whose numbering is public (DRM core, NVIDIA, NVIDIA UVM,
// Qualcomm KGSL, Arm Mali kbase). A table is text, one request per line, so a
// user can add a private family with `extmem threads --ioctl-names=FILE`:
//
//   # FAMILY  PATH-PREFIX       REQUEST        NAME
//   drm       /dev/dri/         d:0x00         DRM_IOCTL_VERSION
//   nvidia    /dev/nvidia       F:0x2a         NV_ESC_RM_CONTROL
//   uvm       /dev/nvidia-uvm   =0x30000001    UVM_INITIALIZE
//
// PATH-PREFIX is what the fd's path must begin with ("*": any file); REQUEST is
// TYPE:NR (TYPE one printable character or 0xNN, NR 0..255 decimal or 0x-hex;
// direction and size are not compared) or =VALUE (the whole 32-bit request).
// docs/memtools.md lists the built-in families.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// The four fields of an ioctl request in the generic Linux layout (x86,
/// arm, arm64, riscv): nr bits 0-7, type 8-15, size 16-29, direction 30-31.
struct IoctlFields {
  unsigned dir = 0;   ///< bit 0: _IOC_WRITE (user to kernel), bit 1: _IOC_READ
  unsigned type = 0;  ///< the "magic" byte ('d' for DRM, 'F' for NVIDIA)
  unsigned nr = 0;    ///< the command number within the type
  unsigned size = 0;  ///< bytes of the argument structure
};

/// Splits the low 32 bits of `request` (the kernel compares only those).
IoctlFields split_ioctl(std::uint64_t request);

/// "_IOC(_IOC_READ|_IOC_WRITE, 'd', 0x00, 0x40)": type as a character when
/// printable, else 0xNN; direction _IOC_NONE when 0.
std::string format_ioctl_fields(const IoctlFields& f);

/// One line of a table.
struct IoctlEntry {
  std::string family;       ///< "drm", "nvidia", ...
  std::string path_prefix;  ///< "/dev/dri/", or "*" for any path
  bool whole = false;       ///< true: `value` is the whole 32-bit request; false: type and nr are compared
  std::uint32_t value = 0;  ///< the request (whole) ...
  unsigned type = 0, nr = 0;  ///< ... or its type and nr
  std::string name;         ///< "DRM_IOCTL_VERSION"
};

/// What a lookup found.
struct IoctlMatch {
  const IoctlEntry* entry = nullptr;  ///< null: no name known
  bool path_checked = true;           ///< false when the fd's path was unknown and the name rests on the number alone
};

/// A set of entries. Copyable; lookups do not allocate.
class IoctlTable {
 public:
  /// Parses table text (format above; '#' starts a comment, blank lines are
  /// skipped). Errors: invalid_argument, step "parse ioctl table"; `syntax`
  /// points at the offending character of the whole text.
  static Result<IoctlTable> parse(std::string_view text, SyntaxError* syntax = nullptr);

  /// Reads and parses the table file at `path`: a regular file of at most
  /// 1 MiB. Errors: os_error("open PATH"|"read PATH", errno); invalid_argument
  /// "read ioctl table" for a directory, FIFO or device ("not a regular file")
  /// or a larger file; parse errors as parse(), with `syntax` filled.
  static Result<IoctlTable> load(const std::string& path, SyntaxError* syntax = nullptr);

  /// The built-in families (parsed once from the text in ioctl_builtin_table.cpp).
  static const IoctlTable& builtin();

  /// Adds `other`'s entries; on equal path prefix and request they win over ours.
  void add(const IoctlTable& other);

  /// The best entry for `request` made on an fd whose path is `fd_path`: the
  /// longest matching path prefix wins, a whole-request entry beats a
  /// type:nr one. An empty `fd_path` (unknown) matches every prefix, and the
  /// result says so.
  IoctlMatch lookup(std::uint64_t request, std::string_view fd_path) const;

  const std::vector<IoctlEntry>& entries() const { return entries_; }

 private:
  std::vector<IoctlEntry> entries_;
};

/// The request as `extmem threads` prints it: the _IOC form, then the name
/// when `table` knows one ("DRM_IOCTL_VERSION [drm]"), with "(by number; fd
/// path unknown)" when the path could not be checked. Requests whose number
/// does not use the _IOC layout (NVIDIA UVM) are printed as 0x-hex with their name.
std::string describe_ioctl(const IoctlTable& table, std::uint64_t request, std::string_view fd_path);

}  // namespace extmem::memtools
