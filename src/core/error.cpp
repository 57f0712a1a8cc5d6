#include "extmem/core/error.h"

#include <cstring>

#include <fmt/format.h>

namespace extmem {

const char* to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::invalid_argument: return "invalid_argument";
    case ErrorKind::os: return "os";
    case ErrorKind::driver: return "driver";
    case ErrorKind::unsupported: return "unsupported";
    case ErrorKind::mismatch: return "mismatch";
    case ErrorKind::protocol: return "protocol";
    case ErrorKind::timeout: return "timeout";
  }
  return "unknown";
}

std::string Error::message() const {
  std::string out = step;
  if (!code.empty()) out += (out.empty() ? "" : ": ") + code;
  if (!detail.empty()) out += (out.empty() ? "" : code.empty() ? ": " : " ") + ("(" + detail + ")");
  return out;
}

std::string errno_code(int errnum) {
  // strerrorname_np (glibc 2.32+) gives the symbolic name, which is what users grep for.
  const char* name = strerrorname_np(errnum);
  if (name == nullptr) return fmt::format("errno {}", errnum);
  return fmt::format("{} ({})", name, errnum);
}

Error os_error(std::string step, int errnum, std::string detail) {
  return Error{std::move(step), ErrorKind::os, errno_code(errnum), std::move(detail)};
}

}  // namespace extmem
