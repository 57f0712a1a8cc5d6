#include "probe/wire_fields.h"

#include <cmath>

#include <fmt/format.h>

#include "probe/json_kind.h"

namespace extmem::probe::wire {

using nlohmann::json;

Error refusal(std::string_view what, std::string_view field, std::string detail) {
  return Error{field.empty() ? std::string(what) : fmt::format("{}.{}", what, field), ErrorKind::protocol, {},
               std::move(detail)};
}

Result<json> parse_object(std::string_view payload, std::string_view what, std::size_t max_bytes) {
  if (payload.size() > max_bytes)
    return refusal(what, {}, fmt::format("{} bytes: at most {} are accepted", payload.size(), max_bytes));
  json j = json::parse(payload, nullptr, false);
  if (j.is_discarded()) return refusal(what, {}, "not JSON: one JSON object is accepted");
  if (!j.is_object()) return refusal(what, {}, fmt::format("found {}: a JSON object is accepted", json_kind(j)));
  return j;
}

bool is_word(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s)
    if (c <= ' ' || c > '~') return false;
  return true;
}

// A key as the refusal quotes it: printable, at most 40 characters.
static std::string quoted_key(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) out += (c > ' ' && c <= '~') ? c : '?';
  return s.size() > 40 ? out + "..." : out;
}

const json* Fields::get(const char* name, bool required) {
  seen_.insert(name);
  if (error_) return nullptr;
  auto it = in_.find(name);
  if (it == in_.end()) {
    if (required) error_ = refusal(what_, name, "missing");
    return nullptr;
  }
  return &*it;
}

void Fields::refuse(const char* name, std::string detail) {
  if (!error_) error_ = refusal(what_, name, std::move(detail));
}

void Fields::adopt(Error e) {
  if (!error_) error_ = std::move(e);
}

std::uint64_t Fields::whole(const char* name, std::uint64_t max) {
  const json* j = get(name, true);
  if (j == nullptr) return 0;
  return whole_of(name, *j, max).value_or(0);
}

std::optional<std::uint64_t> Fields::absent_or_whole(const char* name) {
  const json* j = get(name, false);
  if (j == nullptr) return std::nullopt;
  return whole_of(name, *j, UINT64_MAX);
}

std::optional<std::uint64_t> Fields::null_or_whole(const char* name) {
  const json* j = get(name, true);
  if (j == nullptr || j->is_null()) return std::nullopt;
  return whole_of(name, *j, UINT64_MAX);
}

bool Fields::boolean(const char* name) {
  const json* j = get(name, true);
  if (j == nullptr) return false;
  if (!j->is_boolean()) refuse(name, fmt::format("found {}: true or false is accepted", json_kind(*j)));
  return j->is_boolean() && j->get<bool>();
}

std::optional<bool> Fields::absent_or_boolean(const char* name) {
  const json* j = get(name, false);
  if (j == nullptr) return std::nullopt;
  if (!j->is_boolean()) {
    refuse(name, fmt::format("found {}: true or false is accepted", json_kind(*j)));
    return std::nullopt;
  }
  return j->get<bool>();
}

double Fields::number(const char* name) {
  const json* j = get(name, true);
  if (j == nullptr) return 0;
  return number_of(name, *j).value_or(0);
}

std::optional<double> Fields::absent_or_number(const char* name) {
  const json* j = get(name, false);
  if (j == nullptr) return std::nullopt;
  return number_of(name, *j);
}

std::string Fields::text(const char* name, std::size_t max_bytes) {
  const json* j = get(name, true);
  if (j == nullptr) return {};
  return text_of(name, *j, max_bytes).value_or(std::string());
}

std::optional<std::string> Fields::absent_or_text(const char* name) {
  const json* j = get(name, false);
  if (j == nullptr) return std::nullopt;
  return text_of(name, *j, 4096);
}

std::optional<std::string> Fields::optional_text(const char* name) {
  const json* j = get(name, true);
  if (j == nullptr || j->is_null()) return std::nullopt;
  if (!j->is_string()) {
    refuse(name, fmt::format("found {}: a string or null is accepted", json_kind(*j)));
    return std::nullopt;
  }
  return j->get<std::string>();
}

std::string Fields::word(const char* name) {
  std::string w = text(name, 32);
  if (!error_ && !is_word(w)) refuse(name, "not a word: 1 to 32 printable characters without spaces are accepted");
  return w;
}

// An array's elements, each read by `one` (which refuses what it does not accept).
template <class T, class One>
static std::optional<std::vector<T>> list_of(Fields& f, const char* name, const json* j, std::size_t max_items, One one) {
  if (j == nullptr) return std::nullopt;
  if (!j->is_array()) {
    f.refuse(name, fmt::format("found {}: an array is accepted", json_kind(*j)));
    return std::nullopt;
  }
  if (j->size() > max_items) {
    f.refuse(name, fmt::format("{} items: at most {} are accepted", j->size(), max_items));
    return std::nullopt;
  }
  std::vector<T> out;
  for (const json& item : *j) {
    auto v = one(item);
    if (!v) return std::nullopt;
    out.push_back(std::move(*v));
  }
  return out;
}

std::optional<std::vector<std::uint64_t>> Fields::absent_or_whole_list(const char* name, std::size_t max_items) {
  return list_of<std::uint64_t>(*this, name, get(name, false), max_items,
                                [&](const json& item) { return whole_of(name, item, UINT64_MAX); });
}

std::optional<std::vector<std::string>> Fields::absent_or_text_list(const char* name, std::size_t max_items) {
  return list_of<std::string>(*this, name, get(name, false), max_items,
                              [&](const json& item) { return text_of(name, item, 4096); });
}

std::optional<Error> Fields::finish() {
  if (error_) return error_;
  for (const auto& [key, value] : in_.items())
    if (!seen_.contains(key))
      return refusal(what_, {}, fmt::format("unknown field \"{}\" (fields accepted here: {})", quoted_key(key), accepted()));
  return std::nullopt;
}

std::optional<std::uint64_t> Fields::whole_of(const char* name, const json& j, std::uint64_t max) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<std::int64_t>() >= 0)) {
    refuse(name, fmt::format("found {}: a whole number from 0 to {} is accepted",
                             j.is_number_integer() ? "a negative number" : json_kind(j), max));
    return std::nullopt;
  }
  const std::uint64_t v = j.get<std::uint64_t>();
  if (v > max) {
    refuse(name, fmt::format("{} is not accepted: a whole number from 0 to {}", v, max));
    return std::nullopt;
  }
  return v;
}

std::optional<double> Fields::number_of(const char* name, const json& j) {
  if (!j.is_number() || !std::isfinite(j.get<double>())) {
    refuse(name, fmt::format("found {}: a finite number is accepted", json_kind(j)));
    return std::nullopt;
  }
  return j.get<double>();
}

std::optional<std::string> Fields::text_of(const char* name, const json& j, std::size_t max_bytes) {
  if (!j.is_string()) {
    refuse(name, fmt::format("found {}: a string is accepted", json_kind(j)));
    return std::nullopt;
  }
  if (j.get_ref<const std::string&>().size() > max_bytes) {
    refuse(name, fmt::format("a string of {} bytes: at most {} are accepted", j.get_ref<const std::string&>().size(), max_bytes));
    return std::nullopt;
  }
  return j.get<std::string>();
}

std::string Fields::accepted() const {
  std::string out;
  for (const auto& s : seen_) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace extmem::probe::wire
