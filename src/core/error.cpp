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
    case ErrorKind::peer_closed: return "peer_closed";
    case ErrorKind::no_driver: return "no_driver";
  }
  return "unknown";
}

std::optional<ErrorKind> error_kind_from_string(std::string_view name) noexcept {
  for (ErrorKind k : {ErrorKind::invalid_argument, ErrorKind::os, ErrorKind::driver, ErrorKind::unsupported,
                      ErrorKind::mismatch, ErrorKind::protocol, ErrorKind::timeout, ErrorKind::peer_closed,
                      ErrorKind::no_driver})
    if (name == to_string(k)) return k;
  return std::nullopt;
}

const char* to_string(CodeSpace space) noexcept {
  switch (space) {
    case CodeSpace::none: return "none";
    case CodeSpace::errno_value: return "errno_value";
    case CodeSpace::vk_result: return "vk_result";
    case CodeSpace::cu_result: return "cu_result";
    case CodeSpace::gl_enum: return "gl_enum";
    case CodeSpace::egl_error: return "egl_error";
    case CodeSpace::extmem: return "extmem";
    case CodeSpace::ucs_status: return "ucs_status";
  }
  return "unknown";
}

std::optional<CodeSpace> code_space_from_string(std::string_view name) noexcept {
  for (CodeSpace s : {CodeSpace::none, CodeSpace::errno_value, CodeSpace::vk_result, CodeSpace::cu_result,
                      CodeSpace::gl_enum, CodeSpace::egl_error, CodeSpace::extmem, CodeSpace::ucs_status})
    if (name == to_string(s)) return s;
  return std::nullopt;
}

std::string Error::message() const {
  std::string out = step;
  if (!code.empty()) out += (out.empty() ? "" : ": ") + code;
  if (!detail.empty()) out += (out.empty() ? "" : code.empty() ? ": " : " ") + ("(" + detail + ")");
  return out;
}

std::string Error::shown_code() const {
  if (!code.empty()) return code;
  switch (kind) {
    case ErrorKind::peer_closed: return to_string(ErrorKind::protocol);
    case ErrorKind::no_driver: return to_string(ErrorKind::unsupported);
    default: return to_string(kind);
  }
}

Error coded_error(std::string step, ErrorKind kind, CodeSpace space, std::int64_t native, std::string code,
                  std::string detail) {
  return Error{std::move(step), kind, std::move(code), std::move(detail), space, native};
}

std::string errno_code(int errnum) {
  // strerrorname_np (glibc 2.32+) gives the symbolic name, which is what users grep for.
  const char* name = strerrorname_np(errnum);
  if (name == nullptr) return fmt::format("errno {}", errnum);
  return fmt::format("{} ({})", name, errnum);
}

Error os_error(std::string step, int errnum, std::string detail) {
  return coded_error(std::move(step), ErrorKind::os, CodeSpace::errno_value, errnum, errno_code(errnum), std::move(detail));
}

}  // namespace extmem
