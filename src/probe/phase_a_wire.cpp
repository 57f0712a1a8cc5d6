#include "probe/phase_a_wire.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/os/ipc.h"
#include "probe/error_codec.h"
#include "probe/phase_a_codec.h"

namespace extmem::probe {
namespace {

constexpr const char* kWhat = "decode phase A";

Error message_error(std::string detail) { return Error{kWhat, ErrorKind::protocol, {}, std::move(detail)}; }

}  // namespace

Error driver_not_started(const char* driver) {
  return Error{fmt::format("not started, no selected row uses {}", driver), ErrorKind::unsupported, {}, {}};
}

Result<PhaseA> settle_phase_a(PhaseAFindings found) {
  if (!found.vulkan) return Error{"cannot run", ErrorKind::unsupported, {}, found.vulkan.error().message()};
  if (!found.selected) {
    // Kept whole: the message is the device list; the kind says usage or cannot-run.
    const Error& e = found.selected.error();
    return Error{{}, e.kind == ErrorKind::invalid_argument ? ErrorKind::invalid_argument : ErrorKind::unsupported, {},
                 e.message()};
  }
  PhaseA a;
  a.vulkan = std::move(*found.vulkan);
  a.selected = *found.selected;
  a.gl_driver = std::move(found.gl_driver);
  a.gles = std::move(found.gles);
  a.cuda = std::move(found.cuda);
  return a;
}

std::string encode_phase_a(const Result<PhaseA>& settled) {
  const nlohmann::json j = settled ? nlohmann::json{{"phase_a", phase_a_json(*settled)}}
                                   : nlohmann::json{{"error", error_json(settled.error())}};
  return j.dump();
}

Result<Result<PhaseA>> decode_phase_a(std::string_view text) {
  if (text.size() > os::kMaxPayload)
    return message_error(fmt::format("{} bytes is not accepted: at most {}", text.size(), os::kMaxPayload));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return message_error("not JSON: a JSON object is accepted");
  if (!j.is_object() || j.size() != 1 || !(j.contains("phase_a") || j.contains("error")))
    return message_error("not accepted: one JSON object with either \"phase_a\" or \"error\"");
  if (j.contains("error")) {
    auto e = error_from_json(j["error"]);
    if (!e)
      return Error{fmt::format("{} /error", kWhat), ErrorKind::protocol, {},
                   "not accepted: an error is {step, kind, code, detail, space, native}, with a kind and a code "
                   "space this build names"};
    return Result<PhaseA>(std::move(*e));
  }
  auto a = phase_a_from_json(j["phase_a"], kWhat);  // pointers below "phase_a"
  if (!a) return std::move(a).error();
  return Result<PhaseA>(std::move(*a));
}

}  // namespace extmem::probe
