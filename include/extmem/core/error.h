// Errors as values: the failing step, our kind, and the driver's code verbatim.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <utility>
#include <variant>

namespace extmem {

/// What went wrong, in our terms: what callers branch on. The driver's own
/// words live in Error::code and its number in Error::native; nobody branches on
/// an error's text (the ctest lint.error_text_branches fails on such a branch
/// under src/). The row status a kind gives a probe row it stops before its
/// legs decide is row_status() in verdict.h, listed here per kind.
enum class ErrorKind {
  /// The caller passed something the function does not accept (a usage error
  /// at the command line). Row: FAIL.
  invalid_argument,
  /// A system call failed; code is "ENAME (N)", native the errno value. Row: FAIL.
  os,
  /// A Vulkan/GL/EGL/CUDA call failed; code is the driver's enum name, native
  /// its value. Row: FAIL.
  driver,
  /// The capability is absent or declined: extension, handle type, platform.
  /// Row: UNSUPPORTED.
  unsupported,
  /// Bytes compared and differed. Row: FAIL.
  mismatch,
  /// A peer sent a malformed, truncated or unexpected message. Row: FAIL.
  protocol,
  /// A deadline passed. Row: FAIL.
  timeout,
  /// The other end closed the socket (end of file, no message): the peer
  /// exited or crashed. Callers that expect it (a half that finished, a worker
  /// that ended) branch on this kind. Row: FAIL.
  peer_closed,
  /// The driver itself is absent here: its library does not load, or it has
  /// no usable device (CUDA's stub library, no device). Not a property of the
  /// driver under test, so the row is SKIP.
  no_driver,
};

/// Stable lower-case name of an ErrorKind ("os", "driver", ...).
const char* to_string(ErrorKind kind) noexcept;

/// The ErrorKind whose to_string() is `name`; nullopt for any other text.
std::optional<ErrorKind> error_kind_from_string(std::string_view name) noexcept;

/// Which numbering Error::native is in.
enum class CodeSpace : std::uint8_t {
  none,         ///< no native number (code may still name the failure)
  errno_value,  ///< errno (os_error)
  vk_result,    ///< VkResult (vk::vk_error)
  cu_result,    ///< CUresult (cuda::cu_error)
  gl_enum,      ///< GLenum from glGetError
  egl_error,    ///< EGLint from eglGetError
  extmem,       ///< a code of ours, numbered by the module that defines it (memtools::WordCode)
  ucs_status,   ///< ucs_status_t from UCX (ucx::ucs_error): code "UCS_ERR_UNREACHABLE", native -6
};

/// Stable lower-case name of a CodeSpace, its enumerator's ("errno_value", "vk_result", ...).
const char* to_string(CodeSpace space) noexcept;

/// The CodeSpace whose to_string() is `name`; nullopt for any other text.
std::optional<CodeSpace> code_space_from_string(std::string_view name) noexcept;

/// One failure: the step being attempted ("vkAllocateMemory(export OPAQUE_FD)"),
/// the kind, the code as the OS or driver gave it ("VK_ERROR_OUT_OF_DEVICE_MEMORY",
/// "EBADF (9)"; empty when there is none), free text, and the code's number.
/// step, code and detail are for people; kind, space and native for code.
struct Error {
  std::string step;
  ErrorKind kind = ErrorKind::invalid_argument;
  std::string code;
  std::string detail;
  CodeSpace space = CodeSpace::none;
  std::int64_t native = 0;  ///< the code's number in `space` (errno, VkResult, ...)

  /// "step: code (detail)" with empty parts left out.
  std::string message() const;
  /// Whether this error carries errno value `errnum`.
  bool is_errno(int errnum) const noexcept { return space == CodeSpace::errno_value && native == errnum; }
  /// The code a probe leg shows: `code`, or the kind's name when there is none,
  /// where peer_closed reads "protocol" and no_driver "unsupported" (the rows'
  /// words from before those kinds were split off; the legs' codes are an interface).
  std::string shown_code() const;
};

/// An error with a native number: `code` is its name, `native` the number.
Error coded_error(std::string step, ErrorKind kind, CodeSpace space, std::int64_t native, std::string code,
                  std::string detail = {});

/// Error from errno: code becomes "ENAME (N)" for the given errno value.
Error os_error(std::string step, int errnum, std::string detail = {});

/// "ENAME (N)" for an errno value, e.g. "EBADF (9)"; "errno N" when unnamed.
std::string errno_code(int errnum);

/// A value or an Error. No exceptions cross the public API.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  T&& operator*() && { return std::get<0>(std::move(v_)); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

/// Result without a value.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), failed_(true) {}
  bool ok() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return ok(); }
  const Error& error() const& { return err_; }
  Error&& error() && { return std::move(err_); }

 private:
  Error err_;
  bool failed_ = false;
};

using Status = Result<void>;

}  // namespace extmem
