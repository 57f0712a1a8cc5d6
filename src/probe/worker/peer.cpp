#include "probe/worker/peer.h"
#include "probe/worker/fd_fetch_failure.h"
#include "probe/worker/peer_codec.h"

#include <cstring>

#include <fmt/format.h>

#include "extmem/core/pattern.h"

namespace extmem::probe {
namespace {

using nlohmann::json;

Error protocol(std::string what) { return Error{"peer message", ErrorKind::protocol, {}, std::move(what)}; }

// The next frame, which must be of type `want`.
Result<os::Frame> recv_frame(const ChildContext& ctx, os::MsgType want) {
  auto frame = ctx.peer().recv();
  if (!frame) return std::move(frame).error();
  if (frame->type != want) return protocol(fmt::format("expected message type {}, got {}", int(want), int(frame->type)));
  return frame;
}

// One shared request and its typed reply.
template <class Reply>
Result<Reply> request(const ChildContext& ctx, const peer::Request& req) {
  if (auto s = ctx.peer().send(os::MsgType::request, peer::encode(req)); !s) return std::move(s).error();
  auto frame = recv_frame(ctx, os::MsgType::reply);
  if (!frame) return std::move(frame).error();
  return peer::decode_reply<Reply>(frame->payload);
}

Status send_reply(const ChildContext& ctx, const std::string& payload, int fd = -1) {
  return ctx.peer().send(os::MsgType::reply, payload, fd);
}

}  // namespace

Status send_setup(const ChildContext& ctx, const peer::SetupInfo& info, int fd) {
  return ctx.peer().send(os::MsgType::request, peer::encode(peer::Setup{peer::SetupOk{info}}), fd);
}

Status send_setup_failure(const ChildContext& ctx, const RouteFacts& facts) {
  return ctx.peer().send(os::MsgType::request, peer::encode(peer::Setup{peer::SetupFailed{facts}}));
}

Result<Setup> recv_setup(const ChildContext& ctx) {
  auto frame = recv_frame(ctx, os::MsgType::request);
  if (!frame) return std::move(frame).error();
  Setup s;
  if (frame->fd_refused) {
    // The owner did set up, but its fd could not be fetched (--fd-transport pidfd).
    s.facts = fd_fetch_failure_facts(*frame->fd_refused);
    return s;
  }
  auto decoded = peer::decode_setup(frame->payload);
  if (!decoded) return std::move(decoded).error();
  if (auto* ok = std::get_if<peer::SetupOk>(&*decoded)) {
    s.ok = true;
    s.info = std::move(ok->info);
    s.fd = std::move(frame->fd);
  } else {
    s.facts = std::move(std::get<peer::SetupFailed>(*decoded).facts);
  }
  return s;
}

Result<PeerCheck> peer_check(const ChildContext& ctx, Region region, std::optional<std::uint64_t> seed) {
  auto r = request<peer::CheckReply>(ctx, peer::Check{region, seed});
  if (!r) return std::move(r).error();
  return PeerCheck{r->match, r->mismatch_at, r->payload_at};
}

Status peer_write(const ChildContext& ctx, Region region, std::optional<std::uint64_t> seed) {
  auto r = request<peer::Ack>(ctx, peer::Write{region, seed});
  if (!r) return std::move(r).error();
  return {};
}

Result<std::size_t> peer_count_stale(const ChildContext& ctx, Region region, std::uint64_t seed) {
  auto r = request<peer::CountReply>(ctx, peer::Count{region, seed});
  if (!r) return std::move(r).error();
  return r->stale;
}

Result<std::size_t> peer_read(const ChildContext& ctx, std::size_t offset, std::span<std::byte> out) {
  if (auto s = ctx.peer().send(os::MsgType::request, peer::encode(peer::Read{offset, out.size()})); !s)
    return std::move(s).error();
  auto frame = ctx.peer().recv();
  if (!frame) return std::move(frame).error();
  if (frame->type != os::MsgType::data) return protocol("read reply is not a data message");
  std::size_t n = std::min(out.size(), frame->payload.size());
  std::memcpy(out.data(), frame->payload.data(), n);
  return n;
}

Status peer_done(const ChildContext& ctx) { return ctx.peer().send(os::MsgType::request, peer::encode(peer::Done{})); }

Status peer_stamp(const ChildContext& ctx, std::size_t size, std::uint64_t seed) {
  auto r = request<peer::Ack>(ctx, peer::Stamp{size, seed});
  if (!r) return std::move(r).error();
  return {};
}

Status peer_unstamp(const ChildContext& ctx) {
  auto r = request<peer::Ack>(ctx, peer::Unstamp{});
  if (!r) return std::move(r).error();
  return {};
}

Status peer_fill(const ChildContext& ctx, std::size_t offset, std::size_t length, std::uint64_t seed) {
  auto r = request<peer::Ack>(ctx, peer::Fill{offset, length, seed});
  if (!r) return std::move(r).error();
  return {};
}

Result<std::optional<std::size_t>> peer_first_missing(const ChildContext& ctx, std::size_t size, std::uint64_t seed) {
  auto r = request<peer::MissingReply>(ctx, peer::Missing{size, seed});
  if (!r) return std::move(r).error();
  return std::optional<std::size_t>{r->missing_at};
}

Result<json> peer_request(const ChildContext& ctx, const json& req, os::UniqueFd* fd) {
  auto op = req.is_object() ? req.find("op") : req.end();
  if (op == req.end() || !op->is_string()) return protocol("a route's request without an op");
  if (auto s = ctx.peer().send(os::MsgType::request, req.dump()); !s) return std::move(s).error();
  auto frame = recv_frame(ctx, os::MsgType::reply);
  if (!frame) return std::move(frame).error();
  auto reply = peer::decode_route_reply(frame->payload);
  if (reply && fd != nullptr) *fd = std::move(frame->fd);
  return reply;
}

whole::Far peer_far(const ChildContext& ctx, std::size_t size) {
  return whole::Far{[&ctx, size](std::uint64_t seed) { return peer_stamp(ctx, size, seed); },
                    [&ctx] { return peer_unstamp(ctx); },
                    [&ctx, size](std::uint64_t seed) { return peer_first_missing(ctx, size, seed); }};
}

PeerCheck check_region(std::span<const std::byte> view, const Layout& layout, Region region,
                       std::optional<std::uint64_t> seed) {
  const std::uint64_t s = seed.value_or(seed_of(region));
  PeerCheck c;
  if (layout.offset(region) + kRegionSize > view.size()) {
    c.mismatch_at = 0;
    return c;
  }
  c.mismatch_at = pattern::first_mismatch(layout.region(view, region), s);
  c.match = !c.mismatch_at;
  if (!c.match) c.payload_at = pattern::find(view, s, kRegionSize);
  return c;
}

Status serve(ChildContext& ctx, std::span<std::byte> view) { return serve(ctx, view, ServeSync{}); }

Status serve(ChildContext& ctx, std::span<std::byte> view, const ServeSync& sync) {
  const Layout& layout = ctx.layout();
  // The far side of a whole-allocation sweep: holds the words the first stamp
  // overwrote until unstamp. Made on the first stamp request, from its size.
  std::optional<whole::LocalFar> far;
  auto publish = [&]() -> Status { return sync.publish ? sync.publish() : Status{}; };
  auto in_view = [&](Region r) { return layout.offset(r) + kRegionSize <= view.size(); };
  for (;;) {
    auto frame = recv_frame(ctx, os::MsgType::request);
    if (!frame) return std::move(frame).error();
    auto req = peer::decode_request(frame->payload);
    if (!req) {
      // A request this side cannot read is refused; the conversation goes on.
      if (auto s = send_reply(ctx, peer::encode(peer::ErrorReply{req.error().message()})); !s) return s;
      continue;
    }
    if (std::holds_alternative<peer::Done>(*req)) return {};
    if (sync.refresh)
      if (auto s = sync.refresh(); !s) return s;
    std::string reply;
    os::UniqueFd reply_fd;
    if (const auto* rd = std::get_if<peer::Read>(&*req)) {
      // A read outside the view gets an empty data message: the driving side counts it short.
      std::string bytes;
      if (rd->length <= os::kMaxPayload && rd->offset <= view.size() && rd->length <= view.size() - rd->offset)
        bytes.assign(reinterpret_cast<const char*>(view.data()) + rd->offset, rd->length);
      if (auto s = ctx.peer().send(os::MsgType::data, bytes); !s) return s;
      continue;
    }
    if (const auto* st = std::get_if<peer::Stamp>(&*req)) {
      // No step report for the sweep's requests: a handful of quick ones per leg.
      if (!far) far.emplace(view, whole::plan_for(st->size));
      far->stamp(st->seed);
      if (auto s = publish(); !s) return s;
      reply = peer::encode(peer::Ack{});
    } else if (std::holds_alternative<peer::Unstamp>(*req)) {
      if (far) far->unstamp();
      far.reset();
      if (auto s = publish(); !s) return s;
      reply = peer::encode(peer::Ack{});
    } else if (const auto* m = std::get_if<peer::Missing>(&*req)) {
      reply = peer::encode(peer::MissingReply{whole::first_missing(view, whole::plan_for(m->size), m->seed)});
    } else if (const auto* c = std::get_if<peer::Check>(&*req)) {
      ctx.step(fmt::format("check region {} for the peer", region_name(c->region)));
      const PeerCheck pc = check_region(view, layout, c->region, c->seed);
      reply = peer::encode(peer::CheckReply{pc.match, pc.mismatch_at, pc.payload_at});
    } else if (const auto* w = std::get_if<peer::Write>(&*req)) {
      ctx.step(fmt::format("write region {} for the peer", region_name(w->region)));
      if (in_view(w->region)) pattern::fill(layout.region(view, w->region), w->seed.value_or(seed_of(w->region)));
      if (auto s = publish(); !s) return s;
      reply = peer::encode(peer::Ack{});
    } else if (const auto* fl = std::get_if<peer::Fill>(&*req)) {
      if (fl->length == 0 || fl->offset > view.size() || fl->length > view.size() - fl->offset) {
        reply = peer::encode(peer::ErrorReply{fmt::format("fill of {} bytes at {} is outside the view of {} bytes",
                                                          fl->length, fl->offset, view.size())});
      } else {
        ctx.step(fmt::format("fill {} bytes at +{} (0x{:x}) for the peer", fl->length, fl->offset, fl->offset));
        pattern::fill(view.subspan(fl->offset, fl->length), fl->seed);
        if (auto s = publish(); !s) return s;
        reply = peer::encode(peer::Ack{});
      }
    } else if (const auto* n = std::get_if<peer::Count>(&*req)) {
      // No step report here: a soak sends thousands of these.
      const std::size_t stale =
          in_view(n->region) ? pattern::count_stale_words(layout.region(view, n->region), n->seed) : kRegionSize / 4;
      reply = peer::encode(peer::CountReply{stale});
    } else {
      const auto& op = std::get<peer::RouteOp>(*req);
      auto handled = sync.extra ? sync.extra(op.op, op.body, reply_fd) : std::nullopt;
      if (!handled) {
        reply = peer::encode(peer::ErrorReply{"unknown op \"" + op.op + "\""});
      } else {
        if (!*handled) return std::move(*handled).error();
        reply = (**handled).dump();
      }
    }
    if (auto s = send_reply(ctx, reply, reply_fd.get()); !s) return s;
  }
}

namespace {

constexpr std::uint64_t kSweepSeed = 0x77686f6c65ull;

std::optional<std::string> zerocopy_text(const zerocopy::Outcome& outcome) {
  const auto* failure = std::get_if<zerocopy::Failure>(&outcome);
  if (failure == nullptr) return std::nullopt;
  // A byte the other view does not show, or cannot show (its view ends before it), is not shared.
  if (failure->errc == zerocopy::Errc::not_observed || failure->errc == zerocopy::Errc::short_read ||
      failure->errc == zerocopy::Errc::consumer_too_short)
    return fmt::format("unaliasedAt={} ({})", failure->offset, failure->message);
  return failure->message;
}

std::optional<std::string> sweep_text(const Result<whole::Sweep>& swept) {
  if (!swept) return "whole-allocation sweep: " + swept.error().message();
  if (swept->unaliased_at) return swept->text();
  return std::nullopt;
}

}  // namespace

std::optional<std::string> alias_check(const ChildContext& ctx, std::span<std::byte> local) {
  const std::size_t size = ctx.layout().size;
  if (local.size() < size) return fmt::format("this side's view has {} bytes, the allocation {}", local.size(), size);
  std::span<std::byte> all = local.subspan(0, size);
  // 1. The sentinel check at its offsets (both ends, page boundaries near them,
  //    the middle, seeded random ones), spread over the whole allocation.
  zerocopy::ReadFn read = [&](std::size_t offset, std::span<std::byte> out) -> Result<std::size_t> {
    return peer_read(ctx, offset, out);
  };
  if (auto failed = zerocopy_text(zerocopy::check_fn(all, read))) return failed;
  // 2. Every page (or every Nth above 1 GiB), both directions.
  return sweep_text(whole::sweep(all, whole::plan_for(size), peer_far(ctx, size), kSweepSeed));
}

std::optional<std::string> local_alias_check(std::span<std::byte> near, std::span<std::byte> far, std::size_t size) {
  if (near.size() < size || far.size() < size)
    return fmt::format("views of {} and {} bytes, the allocation {}", near.size(), far.size(), size);
  if (auto failed = zerocopy_text(zerocopy::check(near.subspan(0, size), far.subspan(0, size)))) return failed;
  whole::LocalFar other(far.subspan(0, size), whole::plan_for(size));
  return sweep_text(whole::sweep(near.subspan(0, size), whole::plan_for(size), other.as_far(), kSweepSeed));
}

}  // namespace extmem::probe
