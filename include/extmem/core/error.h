// Errors as values: the failing step, our kind, and the driver's code verbatim.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace extmem {

/// What went wrong, in our terms. The driver's own words live in Error::code.
enum class ErrorKind {
  invalid_argument,  ///< the caller passed something the function does not accept
  os,                ///< a system call failed; code is "ENAME (number)"
  driver,            ///< a Vulkan/GL/CUDA call failed; code is the driver's enum name
  unsupported,       ///< the capability is absent (extension, handle type, platform)
  mismatch,          ///< bytes compared and differed
  protocol,          ///< a peer sent a malformed, truncated or unexpected message
  timeout,           ///< a deadline passed
};

/// Stable lower-case name of an ErrorKind ("os", "driver", ...).
const char* to_string(ErrorKind kind) noexcept;

/// One failure: the step being attempted ("vkAllocateMemory(export OPAQUE_FD)"),
/// the kind, the code as the OS or driver gave it ("VK_ERROR_OUT_OF_DEVICE_MEMORY",
/// "EBADF (9)"; empty when there is none) and free text.
struct Error {
  std::string step;
  ErrorKind kind = ErrorKind::invalid_argument;
  std::string code;
  std::string detail;

  /// "step: code (detail)" with empty parts left out.
  std::string message() const;
};

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
