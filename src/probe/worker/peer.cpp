#include "probe/worker/peer.h"
#include "probe/worker/fd_fetch_failure.h"

#include <cstring>

#include <fmt/format.h>

#include "extmem/core/pattern.h"

namespace extmem::probe {
namespace {

using nlohmann::json;

Error protocol(std::string what) { return Error{"peer message", ErrorKind::protocol, {}, std::move(what)}; }

Result<json> recv_json(const ChildContext& ctx, os::MsgType want, os::UniqueFd* fd = nullptr,
                       std::optional<Error>* fd_refused = nullptr) {
  auto frame = ctx.peer().recv();
  if (!frame) return std::move(frame).error();
  if (frame->type != want) return protocol(fmt::format("expected message type {}, got {}", int(want), int(frame->type)));
  json j = json::parse(frame->payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return protocol("payload is not a JSON object");
  if (fd != nullptr) *fd = std::move(frame->fd);
  if (fd_refused != nullptr) *fd_refused = std::move(frame->fd_refused);
  return j;
}

Result<json> request(const ChildContext& ctx, const json& req, os::UniqueFd* fd = nullptr) {
  if (auto s = ctx.peer().send(os::MsgType::request, req.dump()); !s) return std::move(s).error();
  auto reply = recv_json(ctx, os::MsgType::reply, fd);
  if (!reply) return reply;
  if (auto e = reply->find("error"); e != reply->end() && e->is_string()) return protocol("peer: " + e->get<std::string>());
  return reply;
}

std::optional<Region> region_from(const json& j) {
  auto it = j.find("region");
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  int r = it->get<int>();
  if (r < 0 || r > static_cast<int>(Region::F)) return std::nullopt;
  return static_cast<Region>(r);
}

json opt_json(const std::optional<std::size_t>& v) { return v ? json(*v) : json(nullptr); }
std::optional<std::size_t> opt_size(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::size_t>();
}

}  // namespace

Status send_setup(const ChildContext& ctx, const json& info, int fd) {
  json j = {{"ok", true}, {"info", info}};
  return ctx.peer().send(os::MsgType::request, j.dump(), fd);
}

Status send_setup_failure(const ChildContext& ctx, const RouteFacts& facts) {
  json j = {{"ok", false},
            {"unsupported", facts.unsupported ? json(*facts.unsupported) : json(nullptr)},
            {"fatal", facts.fatal ? json(*facts.fatal) : json(nullptr)},
            {"skip", facts.skip ? json(*facts.skip) : json(nullptr)},
            {"stop_kind", facts.stop_kind ? json(to_string(*facts.stop_kind)) : json(nullptr)}};
  return ctx.peer().send(os::MsgType::request, j.dump());
}

Result<Setup> recv_setup(const ChildContext& ctx) {
  Setup s;
  std::optional<Error> fd_refused;
  auto j = recv_json(ctx, os::MsgType::request, &s.fd, &fd_refused);
  if (!j) return std::move(j).error();
  if (fd_refused) {
    // The owner did set up, but its fd could not be fetched (--fd-transport pidfd).
    s.ok = false;
    s.facts = fd_fetch_failure_facts(*fd_refused);
    return s;
  }
  auto ok = j->find("ok");
  if (ok == j->end() || !ok->is_boolean()) return protocol("setup without \"ok\"");
  s.ok = ok->get<bool>();
  if (s.ok) {
    if (auto info = j->find("info"); info != j->end() && info->is_object()) s.info = *info;
    return s;
  }
  if (auto u = j->find("unsupported"); u != j->end() && u->is_string()) s.facts.unsupported = u->get<std::string>();
  if (auto f = j->find("fatal"); f != j->end() && f->is_string()) s.facts.fatal = f->get<std::string>();
  if (auto k = j->find("skip"); k != j->end() && k->is_string()) s.facts.skip = k->get<std::string>();
  if (auto k = j->find("stop_kind"); k != j->end() && k->is_string())
    s.facts.stop_kind = error_kind_from_string(k->get_ref<const std::string&>());
  if (!s.facts.unsupported && !s.facts.fatal && !s.facts.skip) {
    s.facts.fatal = "peer setup failed without a reason";
    s.facts.stop_kind = ErrorKind::protocol;
  }
  return s;
}

Result<PeerCheck> peer_check(const ChildContext& ctx, Region region, std::optional<std::uint64_t> seed) {
  json req = {{"op", "check"}, {"region", static_cast<int>(region)}};
  if (seed) req["seed"] = *seed;
  auto r = request(ctx, req);
  if (!r) return std::move(r).error();
  auto m = r->find("match");
  if (m == r->end() || !m->is_boolean()) return protocol("check reply without \"match\"");
  return PeerCheck{m->get<bool>(), opt_size(*r, "mismatch_at"), opt_size(*r, "payload_at")};
}

Status peer_write(const ChildContext& ctx, Region region, std::optional<std::uint64_t> seed) {
  json req = {{"op", "write"}, {"region", static_cast<int>(region)}};
  if (seed) req["seed"] = *seed;
  auto r = request(ctx, req);
  if (!r) return std::move(r).error();
  return {};
}

Result<std::size_t> peer_count_stale(const ChildContext& ctx, Region region, std::uint64_t seed) {
  auto r = request(ctx, {{"op", "count"}, {"region", static_cast<int>(region)}, {"seed", seed}});
  if (!r) return std::move(r).error();
  auto stale = opt_size(*r, "stale");
  if (!stale) return protocol("count reply without \"stale\"");
  return *stale;
}

Result<std::size_t> peer_read(const ChildContext& ctx, std::size_t offset, std::span<std::byte> out) {
  json req = {{"op", "read"}, {"offset", offset}, {"length", out.size()}};
  if (auto s = ctx.peer().send(os::MsgType::request, req.dump()); !s) return std::move(s).error();
  auto frame = ctx.peer().recv();
  if (!frame) return std::move(frame).error();
  if (frame->type != os::MsgType::data) return protocol("read reply is not a data message");
  std::size_t n = std::min(out.size(), frame->payload.size());
  std::memcpy(out.data(), frame->payload.data(), n);
  return n;
}

Status peer_done(const ChildContext& ctx) {
  return ctx.peer().send(os::MsgType::request, json{{"op", "done"}}.dump());
}

Status peer_stamp(const ChildContext& ctx, std::size_t size, std::uint64_t seed) {
  auto r = request(ctx, {{"op", "stamp"}, {"size", size}, {"seed", seed}});
  if (!r) return std::move(r).error();
  return {};
}

Status peer_unstamp(const ChildContext& ctx) {
  auto r = request(ctx, {{"op", "unstamp"}});
  if (!r) return std::move(r).error();
  return {};
}

Result<std::optional<std::size_t>> peer_first_missing(const ChildContext& ctx, std::size_t size, std::uint64_t seed) {
  auto r = request(ctx, {{"op", "missing"}, {"size", size}, {"seed", seed}});
  if (!r) return std::move(r).error();
  auto it = r->find("missing_at");
  if (it == r->end()) return protocol("missing reply without \"missing_at\"");
  if (it->is_null()) return std::optional<std::size_t>{};
  if (!it->is_number_unsigned()) return protocol("missing reply with a malformed \"missing_at\"");
  return std::optional<std::size_t>{it->get<std::size_t>()};
}

Result<json> peer_request(const ChildContext& ctx, const json& req, os::UniqueFd* fd) { return request(ctx, req, fd); }

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
  for (;;) {
    auto j = recv_json(ctx, os::MsgType::request);
    if (!j) return std::move(j).error();
    auto op_it = j->find("op");
    std::string op = op_it != j->end() && op_it->is_string() ? op_it->get<std::string>() : "";
    if (op == "done") return {};
    if (sync.refresh)
      if (auto s = sync.refresh(); !s) return s;
    if (op == "read") {
      auto off = opt_size(*j, "offset"), len = opt_size(*j, "length");
      if (!off || !len || *len > os::kMaxPayload || *off > view.size() || *len > view.size() - *off) {
        if (auto s = ctx.peer().send(os::MsgType::data, ""); !s) return s;
        continue;
      }
      std::string bytes(*len, '\0');
      // Volatile-free memcpy is fine: the bytes are re-read from the mapping on every request.
      std::memcpy(bytes.data(), view.data() + *off, *len);
      if (auto s = ctx.peer().send(os::MsgType::data, bytes); !s) return s;
      continue;
    }
    if (op == "stamp" || op == "unstamp" || op == "missing") {
      json reply = json::object();
      const auto size = opt_size(*j, "size");
      std::optional<std::uint64_t> seed;
      if (auto it = j->find("seed"); it != j->end() && it->is_number_unsigned()) seed = it->get<std::uint64_t>();
      if (op == "unstamp") {
        // No step report for these: they are a handful of quick requests per leg.
        if (far) far->unstamp();
        far.reset();
        if (sync.publish)
          if (auto s = sync.publish(); !s) return s;
      } else if (!size || !seed) {
        reply = {{"error", op + " request without a size and a seed"}};
      } else if (op == "stamp") {
        if (!far) far.emplace(view, whole::plan_for(*size));
        far->stamp(*seed);
        if (sync.publish)
          if (auto s = sync.publish(); !s) return s;
      } else {
        reply = {{"missing_at", opt_json(whole::first_missing(view, whole::plan_for(*size), *seed))}};
      }
      if (auto s = ctx.peer().send(os::MsgType::reply, reply.dump()); !s) return s;
      continue;
    }
    json reply;
    os::UniqueFd reply_fd;
    auto region = region_from(*j);
    std::optional<std::uint64_t> seed;
    if (auto it = j->find("seed"); it != j->end() && it->is_number_unsigned()) seed = it->get<std::uint64_t>();
    const bool in_view = region && layout.offset(*region) + kRegionSize <= view.size();
    if ((op == "check" || op == "write" || op == "count") && !region) {
      reply = {{"error", "request without a valid region"}};
    } else if (op == "check") {
      ctx.step(fmt::format("check region {} for the peer", region_name(*region)));
      PeerCheck c = check_region(view, layout, *region, seed);
      reply = {{"match", c.match}, {"mismatch_at", opt_json(c.mismatch_at)}, {"payload_at", opt_json(c.payload_at)}};
    } else if (op == "write") {
      ctx.step(fmt::format("write region {} for the peer", region_name(*region)));
      if (in_view) pattern::fill(layout.region(view, *region), seed.value_or(seed_of(*region)));
      if (sync.publish)
        if (auto s = sync.publish(); !s) return s;
      reply = json::object();
    } else if (op == "count") {
      // No step report here: a soak sends thousands of these.
      std::size_t stale = in_view ? pattern::count_stale_words(layout.region(view, *region), seed.value_or(seed_of(*region)))
                                  : kRegionSize / 4;
      reply = {{"stale", stale}};
    } else if (auto handled = sync.extra ? sync.extra(op, *j, reply_fd) : std::nullopt) {
      if (!*handled) return std::move(*handled).error();
      reply = std::move(**handled);
      if (reply.is_object() && reply.value("publish", false)) {
        reply.erase("publish");
        if (sync.publish)
          if (auto s = sync.publish(); !s) return s;
      }
    } else {
      reply = {{"error", "unknown op \"" + op + "\""}};
    }
    if (auto s = ctx.peer().send(os::MsgType::reply, reply.dump(), reply_fd.get()); !s) return s;
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
