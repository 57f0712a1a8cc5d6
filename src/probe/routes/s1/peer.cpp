#include "probe/routes/s1/peer.h"

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/layout.h"

namespace extmem::probe::s1 {

sync::ProofConfig proof_config() { return sync::ProofConfig{}; }

sync::CopyCheck check_producer_copy(const void* copy) {
  std::span<const std::byte> got(static_cast<const std::byte*>(copy), kRegionSize);
  return sync::CopyCheck{pattern::count_stale_words(got, kProducerSeed), kRegionSize / 4,
                         pattern::first_mismatch(got, kProducerSeed)};
}

Status release_producer(const ChildContext& ctx) {
  auto r = ask(ctx, Release{});
  if (!r) return std::move(r).error();
  return {};
}

void step_sink(void* user, std::string_view step) { static_cast<ChildContext*>(user)->step(step); }

Result<os::Frame> exchange(const ChildContext& ctx, const Request& req, os::UniqueFd* fd) {
  return exchange(ctx, op_of(req), encode(req), fd);
}

Result<os::Frame> exchange(const ChildContext& ctx, std::string_view op, const std::string& payload, os::UniqueFd* fd) {
  if (auto s = ctx.peer().send(os::MsgType::request, payload); !s) return std::move(s).error();
  auto frame = ctx.peer().recv(kReplyTimeoutMs);
  if (!frame) {
    Error e = std::move(frame).error();
    e.step = fmt::format("producer's reply to \"{}\": {}", op, e.step);
    return e;
  }
  if (frame->type != os::MsgType::reply)
    return Error{fmt::format("producer's reply to \"{}\"", op), ErrorKind::protocol, {},
                 fmt::format("message type {}, not a reply", int(frame->type))};
  if (fd != nullptr) *fd = std::move(frame->fd);
  return frame;
}

Error site_error(const Error& e, const SiteFailure& site) {
  return Error{e.step, site.kind(), e.code, site.why, e.space, e.native};
}

void record_proof(const sync::ProofOutcome& o, Leg& order, RouteFacts& facts) {
  if (o.hold) {
    SyncHold h = *o.hold;
    h.leg = order.name;
    facts.sync_holds.push_back(std::move(h));
  }
  order.attempted = true;
  order.write_ok = o.control_timed_out;
  order.read_ok = o.ordered;
  if (!o.ordered) {
    order.failed_step = o.failed_step;
    order.code = o.code;
    order.note = o.detail;
  }
}

std::string proof_detail(const sync::ProofOutcome& o, bool timeline, std::uint64_t last_counter) {
  std::string held = "notrun";
  if (o.hold) {
    const SyncHold& h = *o.hold;
    held = fmt::format("{}ms(ungated {:.0f}us x{}, floor {}ms)", h.hold_ms, h.ungated_us, h.factor, h.floor_ms);
    if (h.over_ceiling) held += fmt::format(" over-ceiling(wanted {}ms)", h.wanted_ms);
  }
  std::string out = fmt::format("order={} control={} held={}", o.ordered ? "ordered" : "not-proven",
                                o.control_code.empty() ? "notrun" : o.control_code, held);
  if (timeline) out += fmt::format(" counter={}", last_counter);
  if (!o.drained) out += " drained=no";
  return out;
}

}  // namespace extmem::probe::s1
