#include "probe/routes/cuda/handover_codec.h"

#include <fmt/format.h>

#include "probe/wire_fields.h"

namespace extmem::probe::handover {
namespace handover_codec_detail {

constexpr std::string_view kRequest = "handover request";
constexpr const char* kExport = "handover-export";
constexpr const char* kSignal = "handover-signal";
constexpr const char* kWait = "handover-wait";

}  // namespace handover_codec_detail

const char* op_of(const Request& r) {
  using namespace handover_codec_detail;
  if (std::holds_alternative<Export>(r)) return kExport;
  return std::holds_alternative<Signal>(r) ? kSignal : kWait;
}

bool is_handover_op(std::string_view op) {
  using namespace handover_codec_detail;
  return op == kExport || op == kSignal || op == kWait;
}

nlohmann::json body(const Request& r) {
  nlohmann::json j = {{"op", op_of(r)}};
  if (const auto* s = std::get_if<Signal>(&r)) j["value"] = s->value;
  if (const auto* w = std::get_if<Wait>(&r)) j["value"] = w->value;
  return j;
}

Result<Request> decode_request(std::string_view payload) {
  using namespace handover_codec_detail;
  auto j = wire::parse_object(payload, kRequest, s1::kMaxMessageBytes);
  if (!j) return std::move(j).error();
  wire::Fields f(*j, kRequest);
  const std::string op = f.word("op");
  if (!wire::is_word(op)) return std::move(*f.finish());
  if (op == kExport) return wire::finished<Request>(f, Export{});
  if (op == kSignal) return wire::finished<Request>(f, Signal{f.whole("value")});
  if (op == kWait) return wire::finished<Request>(f, Wait{f.whole("value")});
  return wire::refusal(kRequest, "op",
                       fmt::format("\"{}\" is not a handover op: {}, {} and {} are accepted", op, kExport, kSignal, kWait));
}

}  // namespace extmem::probe::handover
