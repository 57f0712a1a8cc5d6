// What a JSON value is, for the "found ..." of a decoder's refusal: never the
// value itself, which may be huge or unprintable.
#pragma once

#include <nlohmann/json.hpp>

namespace extmem::probe {

inline const char* json_kind(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::number_float: return "a fraction";
    default: return "a number";
  }
}

}  // namespace extmem::probe
