#include "probe/error_codec.h"

namespace extmem::probe {

nlohmann::json error_json(const Error& e) {
  return {{"step", e.step}, {"kind", to_string(e.kind)}, {"code", e.code}, {"detail", e.detail},
          {"space", to_string(e.space)}, {"native", e.native}};
}

std::optional<Error> error_from_json(const nlohmann::json& j) {
  if (!j.is_object() || j.size() != 6) return std::nullopt;
  for (const char* key : {"step", "kind", "code", "detail", "space"})
    if (!j.contains(key) || !j[key].is_string()) return std::nullopt;
  if (!j.contains("native") || !j["native"].is_number_integer()) return std::nullopt;
  const auto kind = error_kind_from_string(j["kind"].get_ref<const std::string&>());
  const auto space = code_space_from_string(j["space"].get_ref<const std::string&>());
  if (!kind || !space) return std::nullopt;
  // An integer above INT64_MAX is stored unsigned: not a native code of any space.
  if (j["native"].is_number_unsigned() && j["native"].get<std::uint64_t>() > INT64_MAX) return std::nullopt;
  return Error{j["step"].get<std::string>(), *kind,  j["code"].get<std::string>(), j["detail"].get<std::string>(),
               *space, j["native"].get<std::int64_t>()};
}

}  // namespace extmem::probe
