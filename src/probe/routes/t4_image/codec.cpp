#include "probe/routes/t4_image/codec.h"

#include <array>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "probe/json_kind.h"
#include "probe/wire_fields.h"
#include "probe/worker/route_util.h"

namespace extmem::probe::image {
// Named, not anonymous: library files share unity units (route_file.h).
namespace codec_detail {

using nlohmann::json;
using wire::Fields;

constexpr std::string_view kRequest = "image request";
constexpr std::string_view kReply = "image reply";

// Four whole numbers of 32 bits ([x, y, w, h] or [x, y, got, want]), or nullopt when null.
std::optional<std::array<std::uint32_t, 4>> quad(Fields& f, const char* name, bool nullable) {
  const json* j = f.get(name, !nullable);
  if (j == nullptr || j->is_null()) {
    if (j != nullptr && !nullable) f.refuse(name, "null is not accepted: an array of 4 whole numbers");
    return std::nullopt;
  }
  std::array<std::uint32_t, 4> out{};
  bool ok = j->is_array() && j->size() == 4;
  for (std::size_t i = 0; ok && i < 4; ++i) {
    const json& v = (*j)[i];
    ok = v.is_number_unsigned() && v.get<std::uint64_t>() <= UINT32_MAX;
    if (ok) out[i] = v.get<std::uint32_t>();
  }
  if (!ok) {
    f.refuse(name, fmt::format("found {}: an array of 4 whole numbers from 0 to {}{} is accepted", json_kind(*j), UINT32_MAX,
                               nullable ? ", or null," : ""));
    return std::nullopt;
  }
  return out;
}

std::optional<std::uint32_t> absent_or_u32(Fields& f, const char* name) {
  const json* j = f.get(name, false);
  if (j == nullptr) return std::nullopt;
  if (!j->is_number_unsigned() || j->get<std::uint64_t>() > UINT32_MAX) {
    f.refuse(name, fmt::format("found {}: a whole number from 0 to {} is accepted", json_kind(*j), UINT32_MAX));
    return std::nullopt;
  }
  return j->get<std::uint32_t>();
}

}  // namespace codec_detail
using namespace codec_detail;

bool CheckRequest::operator==(const CheckRequest& o) const {
  const Expected &a = expected, &b = o.expected;
  const bool rects = a.rect.has_value() == b.rect.has_value() &&
                     (!a.rect || (a.rect->x == b.rect->x && a.rect->y == b.rect->y && a.rect->w == b.rect->w &&
                                  a.rect->h == b.rect->h));
  return a.base_seed == b.base_seed && rects && a.rect_seed == b.rect_seed && a.rect_constant == b.rect_constant &&
         a.rect_gl_seed == b.rect_gl_seed;
}

std::string encode(const Request& r) {
  json j = std::visit(
      [](const auto& q) -> json {
        using T = std::decay_t<decltype(q)>;
        if constexpr (std::is_same_v<T, SemaphoresRequest>) {
          return {{"op", "image-semaphores"}, {"gl_layout", q.gl_layout}};
        } else if constexpr (std::is_same_v<T, SemaphoreGlRequest>) {
          return {{"op", "image-semaphore-gl"}};
        } else if constexpr (std::is_same_v<T, CheckRequest>) {
          const Expected& e = q.expected;
          json c = {{"op", "image-check"}, {"base_seed", e.base_seed}, {"rect_seed", e.rect_seed}, {"rect", nullptr}};
          if (e.rect) c["rect"] = json::array({e.rect->x, e.rect->y, e.rect->w, e.rect->h});
          if (e.rect_constant) c["rect_constant"] = *e.rect_constant;
          if (e.rect_gl_seed) c["rect_gl_seed"] = *e.rect_gl_seed;
          return c;
        } else if constexpr (std::is_same_v<T, FillRequest>) {
          return {{"op", "image-fill"}, {"seed", q.seed}};
        } else {
          return {{"op", "done"}};
        }
      },
      r);
  return j.dump();
}

Result<Request> decode_request(std::string_view payload) {
  auto j = wire::parse_object(payload, kRequest, kMaxMessageBytes);
  if (!j) return std::move(j).error();
  Fields f(*j, kRequest);
  const std::string op = f.word("op");
  if (!wire::is_word(op)) return std::move(*f.finish());
  if (op == "image-semaphores")
    return wire::finished<Request>(f, SemaphoresRequest{static_cast<std::uint32_t>(f.whole("gl_layout", INT32_MAX))});
  if (op == "image-semaphore-gl") return wire::finished<Request>(f, SemaphoreGlRequest{});
  if (op == "image-fill") return wire::finished<Request>(f, FillRequest{f.whole("seed")});
  if (op == "done") return wire::finished<Request>(f, DoneRequest{});
  if (op == "image-check") {
    CheckRequest c;
    c.expected.base_seed = f.whole("base_seed");
    c.expected.rect_seed = f.whole("rect_seed");
    if (auto q = quad(f, "rect", true)) c.expected.rect = Rect{(*q)[0], (*q)[1], (*q)[2], (*q)[3]};
    c.expected.rect_constant = absent_or_u32(f, "rect_constant");
    c.expected.rect_gl_seed = absent_or_u32(f, "rect_gl_seed");
    if (c.expected.rect_constant && c.expected.rect_gl_seed)
      f.refuse("rect_gl_seed", "not accepted beside rect_constant: a rectangle holds one of them");
    return wire::finished<Request>(f, std::move(c));
  }
  return wire::refusal(kRequest, "op",
                       fmt::format("\"{}\" is not accepted: image-semaphores, image-semaphore-gl, image-check, "
                                   "image-fill or done",
                                   op));
}

Refusal refusal_of(const Error& e) { return Refusal{why_of(e), e.kind == ErrorKind::unsupported}; }

std::string encode(const Ok&) { return json{{"ok", true}}.dump(); }

std::string encode(const Compare& c) {
  json j = {{"texels", c.texels}, {"mismatches", c.mismatches}, {"rect_mismatches", c.rect_mismatches}, {"shape", c.shape}};
  if (c.first) j["first"] = {c.first->x, c.first->y, c.first->got, c.first->want};
  return j.dump();
}

std::string encode(const Refusal& r) {
  json j = {{"error", r.error}};
  if (r.not_offered) j["unsupported"] = true;
  return j.dump();
}

template <class Reply>
Result<Reply> decode_reply(std::string_view payload) {
  auto j = wire::parse_object(payload, kReply, kMaxMessageBytes);
  if (!j) return std::move(j).error();
  Fields f(*j, kReply);
  if (j->contains("error")) {
    const std::string text = f.text("error");
    bool not_offered = false;
    if (const json* u = f.get("unsupported", false)) {
      if (!u->is_boolean() || !u->get<bool>()) f.refuse("unsupported", "only true is accepted (absent when false)");
      else not_offered = true;
    }
    if (auto e = f.finish()) return std::move(*e);
    // The owner's unsupported stays unsupported (a driver without semaphore export is no protocol fault).
    if (not_offered) return Error{"owner", ErrorKind::unsupported, {}, text};
    return Error{"image peer message", ErrorKind::protocol, {}, "owner: " + text};
  }
  Reply r;
  if constexpr (std::is_same_v<Reply, Ok>) {
    if (!f.boolean("ok")) f.refuse("ok", "false is not accepted: a refusal carries \"error\"");
  } else {
    r.texels = f.whole("texels");
    r.mismatches = f.whole("mismatches");
    r.rect_mismatches = f.whole("rect_mismatches");
    r.shape = f.text("shape");
    if (auto q = quad(f, "first", true)) r.first = Compare::Texel{(*q)[0], (*q)[1], (*q)[2], (*q)[3]};
    if (r.mismatches > r.texels || r.rect_mismatches > r.mismatches)
      f.refuse("mismatches", "more mismatches than texels compared (or inside the rectangle than in all)");
  }
  return wire::finished<Reply>(f, std::move(r));
}

template Result<Ok> decode_reply<Ok>(std::string_view);
template Result<Compare> decode_reply<Compare>(std::string_view);

}  // namespace extmem::probe::image
