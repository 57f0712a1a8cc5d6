#include "probe/routes/t5_ucx/side.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/worker/peer.h"
#include "probe/worker/route_util.h"

namespace extmem::probe::t5 {

namespace {

std::string to_hex(const std::vector<std::byte>& bytes) {
  std::string s;
  s.reserve(bytes.size() * 2);
  for (std::byte b : bytes) s += fmt::format("{:02x}", static_cast<unsigned>(b));
  return s;
}

std::optional<std::vector<std::byte>> from_hex(const std::string& s) {
  if (s.size() % 2 != 0) return std::nullopt;
  std::vector<std::byte> out;
  out.reserve(s.size() / 2);
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < s.size(); i += 2) {
    int hi = nibble(s[i]), lo = nibble(s[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<std::byte>(hi * 16 + lo));
  }
  return out;
}

// Progresses `worker` until stopped: a transport like tcp moves RMA only while
// the target progresses. Sleeps 100 us after a run of idle polls, so that a
// shared-memory run (which needs none) costs little CPU.
class Progress {
 public:
  explicit Progress(ucx::Worker& worker)
      : thread_([this, &worker] {
          unsigned idle = 0;
          while (!stop_.load(std::memory_order_relaxed)) {
            if (worker.progress() != 0) {
              idle = 0;
            } else if (++idle > 1000) {
              std::this_thread::sleep_for(std::chrono::microseconds(100));
            }
          }
        }) {}
  ~Progress() {
    stop_ = true;
    thread_.join();
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

Status owner_failure(const ChildContext& ctx, const Error& e) {
  RouteFacts facts;
  stop_row(facts, e.kind, e.kind == ErrorKind::no_driver ? no_ucx_reason(e) : "owner: " + why_of(e));
  return send_setup_failure(ctx, facts);
}

}  // namespace

std::string no_ucx_reason(const Error& e) { return fmt::format("no UCX ({}: {})", e.step, e.detail); }

int owner_serve(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  ctx.step("ucp_init + ucp_worker_create");
  auto worker = ucx::Worker::open();
  if (!worker) return owner_failure(ctx, worker.error()) ? 0 : 1;
  ctx.step("ucp_mem_map(ALLOCATE)");
  auto memory = (*worker)->allocate(layout.size);
  if (!memory) return owner_failure(ctx, memory.error()) ? 0 : 1;
  ctx.step("write region A");
  pattern::fill(layout.region((*memory)->bytes(), Region::A), seed_of(Region::A));
  ctx.step("ucp_rkey_pack + ucp_worker_get_address");
  auto rkey = (*memory)->pack_rkey();
  if (!rkey) return owner_failure(ctx, rkey.error()) ? 0 : 1;
  auto address = (*worker)->address();
  if (!address) return owner_failure(ctx, address.error()) ? 0 : 1;
  const std::uint64_t handed_out = (*memory)->remote_address();
  std::unique_ptr<ucx::Memory> served = std::move(*memory), stale;
  if (ctx.test_fault("ucp_mem_map(ALLOCATE)", kStaleFault.action)) {
    // Test-only: remap. The key handed out stays that of the first memory.
    auto again = (*worker)->allocate(layout.size);
    if (!again) return owner_failure(ctx, again.error()) ? 0 : 1;
    std::memcpy((*again)->bytes().data(), served->bytes().data(), layout.size);
    stale = std::move(served);
    served = std::move(*again);
  }
  ctx.step("send the setup");
  if (!send_setup(ctx, peer::SetupInfo{.allocation_size = layout.size}, -1)) return 1;
  ServeSync sync;
  sync.extra = [&](const std::string& op, const nlohmann::json&, os::UniqueFd&) -> std::optional<Result<nlohmann::json>> {
    if (op == "ucx-connect")
      return Result<nlohmann::json>(
          nlohmann::json{{"address", handed_out}, {"rkey", to_hex(*rkey)}, {"worker", to_hex(*address)}});
    if (op == "ucx-mapped") {
      stale.reset();  // the stale fault's unmap; nothing otherwise
      return Result<nlohmann::json>(nlohmann::json::object());
    }
    return std::nullopt;
  };
  ctx.step("serve the peer's checks");
  Status served_ok;
  {
    Progress progress(**worker);
    served_ok = serve(ctx, served->bytes().first(layout.size), sync);
  }
  stale.reset();
  served.reset();
  return served_ok ? 0 : 1;
}

Result<Connection> connect_owner(ChildContext& ctx) {
  Connection c;
  ctx.step("ucp_init + ucp_worker_create");
  auto worker = ucx::Worker::open();
  if (!worker) return worker.error();
  c.worker = std::move(*worker);
  ctx.step("ask the owner for its UCX address and key");
  auto reply = peer_request(ctx, nlohmann::json{{"op", "ucx-connect"}});
  if (!reply) return reply.error();
  const nlohmann::json& r = *reply;
  std::optional<std::vector<std::byte>> rkey, address;
  if (r.contains("address") && r["address"].is_number_unsigned() && r.contains("rkey") && r["rkey"].is_string() &&
      r.contains("worker") && r["worker"].is_string()) {
    rkey = from_hex(r["rkey"].get<std::string>());
    address = from_hex(r["worker"].get<std::string>());
  }
  if (!rkey || !address || rkey->empty() || address->empty())
    return Error{"peer ucx-connect", ErrorKind::protocol, {},
                 "the reply is not {address: number, rkey: hex, worker: hex}"};
  c.remote_address = r["address"].get<std::uint64_t>();
  ctx.step("ucp_ep_create");
  auto endpoint = c.worker->connect(*address);
  if (!endpoint) return endpoint.error();
  c.endpoint = std::move(*endpoint);
  ctx.step("ucp_ep_rkey_unpack");
  auto key = c.endpoint->unpack(*rkey);
  if (!key) return key.error();
  c.key = std::move(*key);
  return c;
}

Status say_mapped(ChildContext& ctx) {
  auto reply = peer_request(ctx, nlohmann::json{{"op", "ucx-mapped"}});
  if (!reply) return reply.error();
  return {};
}

PathFacts path_facts(const ChildContext& ctx, std::vector<std::string> took, const ucx::EndpointInfo& lanes) {
  PathFacts f{.took = std::move(took), .expect = ctx.params().expect_transport, .lanes = lanes.raw};
  if (const char* tls = std::getenv("UCX_TLS"); tls != nullptr) f.ucx_tls = tls;
  if (!path_as_expected(f)) {
    // What this host has when nothing is left out: the difference between a fall-back and no choice.
    if (auto all = ucx::Worker::open(ucx::ContextOptions{.tls = "all"}))
      for (const std::string& tl : ucx::context_transports((*all)->context_info()))
        if (ucx::is_shared_memory(tl)) f.host_shm.push_back(tl);
  }
  return f;
}

void judge_path(RouteReport& rep, Leg& leg, const PathFacts& facts) {
  leg.note += fmt::format("{}{}", leg.note.empty() ? "" : " ", path_note(facts));
  rep.detail.push_back(fmt::format("ucx-transport={}", fmt::join(facts.took, ",")));
  rep.detail.push_back(fmt::format("ucx-lanes={}", facts.lanes));
  if (auto why = path_failure(facts)) stop_row(rep.facts, ErrorKind::driver, *why);
}

}  // namespace extmem::probe::t5
