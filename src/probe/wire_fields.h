// The strict reader every codec between extmem's processes shares (the peer
// requests and replies, the S1 producer conversation): a payload is one JSON
// object of bounded size, each message has exactly its fields, each field its
// type and bounds, and the first field refused is named in the error's step
// ("WHAT.FIELD"), with what was found and what is accepted in its detail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "extmem/core/error.h"
#include "probe/json_kind.h"

namespace extmem::probe::wire {

/// A protocol error: step `what` or "what.field", the detail as given.
Error refusal(std::string_view what, std::string_view field, std::string detail);

/// `payload` as one JSON object of at most `max_bytes`. Errors: protocol (refusal(what, {}, ...)).
Result<nlohmann::json> parse_object(std::string_view payload, std::string_view what, std::size_t max_bytes);

/// Whether `s` is a word: 1 to 32 printable, non-space ASCII characters (an op, a kind's key).
bool is_word(std::string_view s);

/// Reads the fields of one object (which must outlive the reader). Each getter
/// marks its field as accepted; the first refusal is kept and later getters
/// return defaults; finish() also refuses a field no getter asked for.
class Fields {
 public:
  Fields(const nlohmann::json& in, std::string_view what) : in_(in), what_(what) {}

  /// The field, or nullptr when absent (refused when `required`) or after a refusal.
  const nlohmann::json* get(const char* name, bool required);
  void refuse(const char* name, std::string detail);
  /// Keeps `e` as the refusal, unless one is kept already (a nested object's own reader).
  void adopt(Error e);

  /// A whole number from 0 to `max`.
  std::uint64_t whole(const char* name, std::uint64_t max = UINT64_MAX);
  /// Absent, or a whole number.
  std::optional<std::uint64_t> absent_or_whole(const char* name);
  /// Present: null or a whole number.
  std::optional<std::uint64_t> null_or_whole(const char* name);
  bool boolean(const char* name);
  /// Absent, or true or false.
  std::optional<bool> absent_or_boolean(const char* name);
  /// A finite number (integer or fraction).
  double number(const char* name);
  /// Absent, or a finite number.
  std::optional<double> absent_or_number(const char* name);
  /// A string of at most `max_bytes`.
  std::string text(const char* name, std::size_t max_bytes = 4096);
  /// Absent, or a string of at most 4096 bytes.
  std::optional<std::string> absent_or_text(const char* name);
  /// Present: null or a string.
  std::optional<std::string> optional_text(const char* name);
  /// A word (is_word).
  std::string word(const char* name);
  /// Absent, or an array of at most `max_items` whole numbers.
  std::optional<std::vector<std::uint64_t>> absent_or_whole_list(const char* name, std::size_t max_items);
  /// Absent, or an array of at most `max_items` strings of at most 4096 bytes each.
  std::optional<std::vector<std::string>> absent_or_text_list(const char* name, std::size_t max_items);

  /// The first refusal, or one for a field no getter asked for.
  std::optional<Error> finish();
  /// What the refusals name before the field ("peer setup.info").
  std::string_view what() const { return what_; }

 private:
  std::optional<std::uint64_t> whole_of(const char* name, const nlohmann::json& j, std::uint64_t max);
  std::optional<double> number_of(const char* name, const nlohmann::json& j);
  std::optional<std::string> text_of(const char* name, const nlohmann::json& j, std::size_t max_bytes);
  std::string accepted() const;

  const nlohmann::json& in_;
  std::string_view what_;
  std::set<std::string, std::less<>> seen_;
  std::optional<Error> error_;
};

/// `value` when `f` finished without a refusal, else the refusal.
template <class T>
Result<T> finished(Fields& f, T value) {
  if (auto e = f.finish()) return std::move(*e);
  return value;
}

/// The nested object `name` of `f` read by `one(Fields&)` with its own reader,
/// whose refusals name "WHAT.NAME.FIELD" and become `f`'s; nullopt when absent
/// or refused.
template <class T, class One>
std::optional<T> nested(Fields& f, const char* name, One one) {
  const nlohmann::json* j = f.get(name, false);
  if (j == nullptr) return std::nullopt;
  if (!j->is_object()) {
    f.refuse(name, std::string("found ") + json_kind(*j) + ": an object is accepted");
    return std::nullopt;
  }
  const std::string what = std::string(f.what()) + "." + name;
  Fields inner(*j, what);
  T value = one(inner);
  if (auto e = inner.finish()) {
    f.adopt(std::move(*e));
    return std::nullopt;
  }
  return value;
}

inline nlohmann::json nullable(const std::optional<std::uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
inline nlohmann::json nullable(const std::optional<std::string>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace extmem::probe::wire
