#include "probe/worker/route_util.h"

#include "probe/worker/drivers.h"
#include "probe/worker/measure.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace extmem::probe {

void fail_leg(Leg& leg, const Error& error) {
  leg.attempted = true;
  if (!leg.failed_step.empty()) return;  // keep the first failure
  leg.failed_step = error.step;
  leg.code = error.shown_code();
  if (!error.detail.empty()) leg.note += (leg.note.empty() ? "" : " ") + error.detail;
}

std::string why_of(const Error& error) {
  std::string s = error.step;
  if (!error.code.empty()) s += " -> " + error.code;
  if (!error.detail.empty()) s += " (" + error.detail + ")";
  return s;
}

Result<std::shared_ptr<vk::Device>> open_device(ChildContext& ctx, const std::vector<std::string>& wanted) {
  // Both steps are told even when the device is kept, so a fault hook or a hang
  // names the same step whether the process is fresh or warm.
  ctx.step("create Vulkan instance");
  ctx.step("create Vulkan device");
  return drivers::vulkan_device(ctx.params().device_index, wanted);
}

void read_local(std::span<const std::byte> view, const Layout& layout, Region region, Leg& leg) {
  leg.attempted = true;
  PeerCheck c = check_region(view, layout, region);
  leg.read_ok = c.match;
  if (!c.match) {
    std::string n = fmt::format("region {} differs at +{}", region_name(region), c.mismatch_at.value_or(0));
    if (c.payload_at) n += fmt::format(", payloadAt={}", *c.payload_at);
    leg.note += (leg.note.empty() ? "" : " ") + n;
  }
}

namespace {
void remote(ChildContext& ctx, Region region, Leg& leg, bool& flag, std::optional<std::uint64_t> seed = {}) {
  auto c = peer_check(ctx, region, seed);
  if (!c) {
    fail_leg(leg, c.error());
    return;
  }
  flag = c->match;
  if (!c->match) {
    std::string n = fmt::format("peer sees region {} wrong", region_name(region));
    if (c->payload_at) n += fmt::format(", payloadAt={} in the peer", *c->payload_at);
    leg.note += (leg.note.empty() ? "" : " ") + n;
  }
}
}  // namespace

void confirm_remote(ChildContext& ctx, Region region, Leg& leg, std::optional<std::uint64_t> seed) {
  remote(ctx, region, leg, leg.write_ok, seed);
}

void read_remote(ChildContext& ctx, Region region, Leg& leg) {
  leg.attempted = true;
  remote(ctx, region, leg, leg.read_ok);
}

void alias_leg(ChildContext& ctx, std::span<std::byte> local, Leg& leg) {
  if (!(leg.read_ok && leg.write_ok)) return;
  ctx.step(fmt::format("zerocopy alias check through {}", leg.name));
  if (auto failure = alias_check(ctx, local)) {
    leg.write_ok = false;
    leg.failed_step = "zerocopy alias check";
    leg.note += (leg.note.empty() ? "" : " ") + *failure;
  }
  if (leg.read_ok && leg.write_ok && measure::enabled()) {
    ctx.step(fmt::format("measure CPU bandwidth through {}", leg.name));
    measure::cpu_leg(leg.name, local);
  }
}

Result<os::Mapping> partial_alias_copy(const os::Mapping& shared, std::size_t aliased) {
  auto copy = os::Mapping::anonymous(shared.size());
  if (!copy) return copy;
  std::memcpy(copy->data(), shared.data(), shared.size());
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t head = std::min(aliased, shared.size()) / page * page;
  if (head == 0) return copy;
  // old_size 0 on a shared mapping makes a second mapping of the same pages
  // instead of moving them; MREMAP_FIXED puts it over the copy's first pages.
  void* at = ::mremap(shared.data(), 0, head, MREMAP_MAYMOVE | MREMAP_FIXED, copy->data());
  if (at == MAP_FAILED) return os_error("mremap(old_size = 0)", errno);
  return copy;
}

bool advertised(const vk::Device& device, VkExternalMemoryHandleTypeFlagBits type,
                VkExternalMemoryFeatureFlagBits feature) {
  VkExternalMemoryProperties p = device.instance().external_buffer_properties(device.physical(), type);
  return (p.externalMemoryFeatures & feature) != 0;
}

SiteFailure classify_site(const Error& error, bool was_advertised, const std::string& handle_type) {
  if (was_advertised) return {false, why_of(error) + fmt::format(" although {} is advertised", handle_type)};
  return {true, fmt::format("{} not advertised; {}", handle_type, why_of(error))};
}

Result<os::UniqueFd> tmpfs_file(std::size_t bytes, const std::string& prefix, std::string& where) {
  std::vector<std::string> dirs = {"/dev/shm"};
  if (const char* t = std::getenv("TMPDIR")) dirs.emplace_back(t);
  dirs.emplace_back("/tmp");
  Error last{"open a tmpfs file", ErrorKind::unsupported, {}, "no writable directory"};
  for (const std::string& dir : dirs) {
    struct statfs fs {};
    if (::statfs(dir.c_str(), &fs) != 0) continue;
    std::string path = dir + "/" + prefix + "-XXXXXX";
    os::UniqueFd fd(::mkostemp(path.data(), O_CLOEXEC));
    if (!fd.valid()) {
      last = os_error("mkostemp " + path, errno);
      continue;
    }
    ::unlink(path.c_str());
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return os_error("ftruncate " + path, errno);
    where = fmt::format("{} ({})", dir, fs.f_type == TMPFS_MAGIC ? "tmpfs" : "not tmpfs");
    return fd;
  }
  return last;
}

}  // namespace extmem::probe

#include <sys/mman.h>

#include "extmem/core/pattern.h"

namespace extmem::probe {

int memfd_owner_serve(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  ctx.step("memfd_create + ftruncate");
  auto fd = os::create_memfd("extmem-probe", layout.size);
  if (!fd) {
    (void)send_setup_failure(ctx, RouteFacts{{}, {}, "owner: " + why_of(fd.error())});
    return 0;
  }
  ctx.step("mmap(memfd)");
  auto map = os::Mapping::map(fd->get(), layout.size, MAP_SHARED);
  if (!map) {
    (void)send_setup_failure(ctx, RouteFacts{{}, {}, "owner: " + why_of(map.error())});
    return 0;
  }
  ctx.step("write region A");
  pattern::fill(layout.region(map->bytes(), Region::A), seed_of(Region::A));
  ctx.step("send the memfd");
  if (!send_setup(ctx, peer::SetupInfo{.allocation_size = layout.size}, fd->get())) return 1;
  fd->reset();
  ctx.step("serve the peer's checks");
  return serve(ctx, map->bytes()) ? 0 : 1;
}

int receive_and_serve(ChildContext& ctx) {
  ctx.step("wait for the peer's fd");
  auto setup = recv_setup(ctx);
  if (!setup || !setup->ok) return 0;
  ctx.step("mmap(received fd)");
  auto map = os::Mapping::map(setup->fd.get(), ctx.layout().size, MAP_SHARED);
  if (!map) {
    // The driving side learns of it through failed checks; serve an empty view.
    (void)serve(ctx, {});
    return 0;
  }
  ctx.step("serve the peer's checks");
  return serve(ctx, map->bytes()) ? 0 : 1;
}

void maybe_soak(ChildContext& ctx, RouteReport& rep, const SoakPlan& plan, const OtherSide& other) {
  if (ctx.params().soak_s <= 0) return;
  if (decide(rep.facts, rep.legs).status != RowStatus::ok) {
    rep.detail.push_back("soak: not run (the route is not OK)");
    return;
  }
  SoakPlan p = plan;
  p.seconds = ctx.params().soak_s;
  std::optional<Error> error;
  rep.facts.soak = run_soak(ctx, p, other, &error);
  rep.detail.push_back(fmt::format("soak: stale={}/{} words in {} rounds", rep.facts.soak->stale, rep.facts.soak->words,
                                   rep.facts.soak->rounds));
  if (error) rep.detail.push_back("soak stopped early: " + why_of(*error));
}

void confirm_local(std::span<const std::byte> view, const Layout& layout, Region region, Leg& leg,
                   std::optional<std::uint64_t> seed) {
  PeerCheck c = check_region(view, layout, region, seed);
  leg.write_ok = c.match;
  if (!c.match) {
    std::string n = fmt::format("region {} not seen here", region_name(region));
    if (c.payload_at) n += fmt::format(", payloadAt={}", *c.payload_at);
    leg.note += (leg.note.empty() ? "" : " ") + n;
  }
}

}  // namespace extmem::probe
