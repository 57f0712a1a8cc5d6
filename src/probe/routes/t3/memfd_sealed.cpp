// T3-memfd-sealed: a server that wants the client unable to shrink or rewrite
// shared memory seals it. The client creates a memfd with sealing allowed (and
// MFD_NOEXEC_SEAL where the kernel has it), seals one copy against shrink and
// grow and a second against write too, and sends both; the server reads the
// seals back, checks each is enforced in its own process, and round-trips bytes
// as far as the seals allow. docs/probe.md, "Sealed memfds".
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "probe/worker/half_end.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kLegs[] = {
    {"sealed", true, "a memfd sealed against shrink and grow, mapped by the peer, shares the bytes"},
    {"wsealed", false, "a write-sealed memfd is readable by the peer and refuses a writable map"},
};

std::string seal_names(int seals) {
  std::string s;
  for (auto [bit, name] : {std::pair{F_SEAL_SEAL, "SEAL"}, std::pair{F_SEAL_SHRINK, "SHRINK"},
                           std::pair{F_SEAL_GROW, "GROW"}, std::pair{F_SEAL_WRITE, "WRITE"},
                           std::pair{F_SEAL_FUTURE_WRITE, "FUTURE_WRITE"}, std::pair{0x20, "EXEC"}}) {
    if (seals & bit) s += (s.empty() ? "" : "|") + std::string(name);
  }
  return s.empty() ? "none" : s;
}

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U  // Linux 6.3 (include/uapi/linux/memfd.h)
#endif

struct SealedMemfd {
  os::UniqueFd fd;
  std::string noexec;  // what became of MFD_NOEXEC_SEAL
};

// Creates the memfd, detecting MFD_NOEXEC_SEAL instead of assuming it (EINVAL before Linux 6.3).
Result<SealedMemfd> create(ChildContext& ctx, std::size_t size) {
  ctx.step("memfd_create(MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL)");
  unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
  unsigned noexec = MFD_NOEXEC_SEAL;
  // Test-only: no sealing at all. MFD_NOEXEC_SEAL must go too, since it implies MFD_ALLOW_SEALING.
  if (ctx.test_fault("memfd_create(MFD_ALLOW_SEALING", "nosealing")) flags &= ~MFD_ALLOW_SEALING, noexec = 0;
  SealedMemfd m;
  m.fd.reset(noexec != 0 ? ::memfd_create("extmem-sealed", flags | noexec) : -1);
  if (m.fd.valid()) {
    m.noexec = "MFD_NOEXEC_SEAL accepted";
  } else {
    const int err = noexec != 0 ? errno : EINVAL;
    if (err != EINVAL) return os_error("memfd_create(MFD_NOEXEC_SEAL)", err);
    m.noexec = "MFD_NOEXEC_SEAL: " + errno_code(err) + " (kernel before 6.3), created without it";
    m.fd.reset(::memfd_create("extmem-sealed", flags));
    if (!m.fd.valid()) return os_error("memfd_create(MFD_ALLOW_SEALING)", errno);
  }
  if (::ftruncate(m.fd.get(), static_cast<off_t>(size)) != 0) return os_error("ftruncate", errno);
  return m;
}

// The client half: two sealed memfds with region A written, sent one after the other; then serves checks.
int client(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  auto fail = [&](RouteFacts f) {
    (void)send_setup_failure(ctx, f);
    return 0;
  };
  auto shrink_grow = create(ctx, layout.size);
  if (!shrink_grow) return fail(RouteFacts{{}, {}, "client: " + why_of(shrink_grow.error())});
  auto write_sealed = create(ctx, layout.size);
  if (!write_sealed) return fail(RouteFacts{{}, {}, "client: " + why_of(write_sealed.error())});

  auto map = os::Mapping::map(shrink_grow->fd.get(), layout.size, MAP_SHARED);
  if (!map) return fail(RouteFacts{{}, {}, "client: " + why_of(map.error())});
  pattern::fill(layout.region(map->bytes(), Region::A), seed_of(Region::A));
  {
    // F_SEAL_WRITE is refused (EBUSY) while a writable shared mapping exists: write, then unmap.
    auto w = os::Mapping::map(write_sealed->fd.get(), layout.size, MAP_SHARED);
    if (!w) return fail(RouteFacts{{}, {}, "client: " + why_of(w.error())});
    pattern::fill(layout.region(w->bytes(), Region::A), seed_of(Region::A));
  }

  peer::SetupInfo infos[2];
  const int wanted[2] = {F_SEAL_SHRINK | F_SEAL_GROW, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE};
  int fds[2] = {shrink_grow->fd.get(), write_sealed->fd.get()};
  for (int i = 0; i < 2; ++i) {
    ctx.step(fmt::format("fcntl(F_ADD_SEALS, {})", seal_names(wanted[i])));
    if (::fcntl(fds[i], F_ADD_SEALS, wanted[i]) != 0) {
      const int err = errno;
      if (err == EPERM) return fail(RouteFacts{"sealing unavailable: fcntl(F_ADD_SEALS) -> " + errno_code(err), {}, {}});
      return fail(RouteFacts{{}, {}, "client: fcntl(F_ADD_SEALS) -> " + errno_code(err)});
    }
    const int got = ::fcntl(fds[i], F_GET_SEALS);
    if (got < 0 || (got & wanted[i]) != wanted[i])
      return fail(RouteFacts{{}, {}, fmt::format("client: F_GET_SEALS reads {} after adding {}", seal_names(got), seal_names(wanted[i]))});
    // A dropped seal is the failure this row exists for: shrinking must be refused.
    if (::ftruncate(fds[i], static_cast<off_t>(layout.size / 2)) == 0)
      return fail(RouteFacts{{}, {}, fmt::format("seal silently dropped: ftruncate shrank a memfd sealed {}", seal_names(got))});
    infos[i].seals = peer::Seals{static_cast<std::uint32_t>(got), i == 0 ? shrink_grow->noexec : write_sealed->noexec};
  }
  ctx.step("send the sealed memfds");
  if (!send_setup(ctx, infos[0], fds[0]) || !send_setup(ctx, infos[1], fds[1])) return 1;
  ctx.step("serve the server's checks");
  return serve(ctx, map->bytes()) ? 0 : 1;
}

// Whether an operation the seals forbid was refused; "" when it was, else what happened.
std::string must_fail(int rc, const char* what) {
  if (rc != 0) return {};
  return std::string(what) + " succeeded";
}

int server(ChildContext& ctx) {
  const Layout& layout = ctx.layout();
  Leg sealed = report_leg({kLegs, "sealed"});
  Leg wsealed = report_leg({kLegs, "wsealed"});  // read-only by construction: the write seal forbids the write direction
  DrivingHalf half(ctx, {&sealed, &wsealed});
  RouteReport& rep = half.rep;
  auto first = half.start("the sealed memfds");
  if (!first) return half.finish();
  auto second = recv_setup(ctx);
  if (!second || !second->ok) {
    rep.facts.fatal = "server: second sealed memfd did not arrive";
    return half.finish();
  }
  rep.detail.push_back(first->info.seals ? first->info.seals->noexec : std::string("?"));
  std::vector<std::string> dropped;

  // Variant 1: sealed against shrink and grow; the full round trip is allowed.
  ctx.step("F_GET_SEALS on the received shrink/grow-sealed memfd");
  const int s1 = ::fcntl(first->fd.get(), F_GET_SEALS);
  rep.detail.push_back(fmt::format("shrink/grow memfd: seals here {}", seal_names(s1)));
  if (s1 < 0 || (s1 & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
    dropped.push_back(fmt::format("F_GET_SEALS here reads {}", seal_names(s1)));
  if (auto d = must_fail(::ftruncate(first->fd.get(), static_cast<off_t>(layout.size / 2)), "ftruncate (shrink)"); !d.empty())
    dropped.push_back(d);
  if (auto d = must_fail(::ftruncate(first->fd.get(), static_cast<off_t>(layout.size * 2)), "ftruncate (grow)"); !d.empty())
    dropped.push_back(d);
  ctx.step("mmap(shrink/grow-sealed memfd, MAP_SHARED, read/write)");
  sealed.attempted = true;
  auto map = os::Mapping::map(first->fd.get(), layout.size, MAP_SHARED);
  if (!map) {
    fail_leg(sealed, map.error());
  } else {
    read_local(map->bytes(), layout, Region::A, sealed);
    pattern::fill(layout.region(map->bytes(), Region::B), seed_of(Region::B));
    ctx.step("client checks region B");
    confirm_remote(ctx, Region::B, sealed);
  }

  // Variant 2: also sealed against write; only reading is allowed.
  ctx.step("F_GET_SEALS on the received write-sealed memfd");
  const int s2 = ::fcntl(second->fd.get(), F_GET_SEALS);
  if (s2 < 0 || !(s2 & F_SEAL_WRITE)) dropped.push_back(fmt::format("write seal reads {}", seal_names(s2)));
  ctx.step("mmap(write-sealed memfd, MAP_SHARED, read/write) must be refused");
  std::string rw_map;
  if (auto rw = os::Mapping::map(second->fd.get(), layout.size, MAP_SHARED); rw) {
    dropped.push_back("a read/write MAP_SHARED mapping of a write-sealed memfd was granted");
    rw_map = "granted";
  } else {
    rw_map = rw.error().code;
  }
  const char byte = 0;
  if (::pwrite(second->fd.get(), &byte, 1, 0) == 1) dropped.push_back("pwrite into a write-sealed memfd succeeded");
  ctx.step("mmap(write-sealed memfd, MAP_SHARED, read-only)");
  wsealed.attempted = true;
  void* ro = ::mmap(nullptr, layout.size, PROT_READ, MAP_SHARED, second->fd.get(), 0);
  std::string ro_map;
  if (ro == MAP_FAILED) {
    ro_map = errno_code(errno);  // EPERM here is the pre-6.1 kernel refusal of read-only shared maps of sealed memfds
    wsealed.failed_step = "mmap(PROT_READ, MAP_SHARED)";
    wsealed.code = ro_map;
  } else {
    ro_map = "granted";
    read_local(std::span<const std::byte>(static_cast<const std::byte*>(ro), layout.size), layout, Region::A, wsealed);
    ::munmap(ro, layout.size);
  }
  rep.detail.push_back(fmt::format("write-sealed memfd: seals here {}; read/write map {}; read-only map {}",
                                   seal_names(s2), rw_map, ro_map));
  if (!dropped.empty()) rep.facts.fatal = fmt::format("seal silently dropped: {}", fmt::join(dropped, "; "));
  if (map) alias_leg(ctx, map->bytes(), sealed);
  return map ? half.finish(SoakPlan{0, map->bytes(), Region::B, Region::A, Region::E, nullptr}) : half.finish();
}

constexpr FaultDef kFaults[] = {
    {"nosealing", Role::client, "memfd_create(MFD_ALLOW_SEALING",
     "the memfd is created without MFD_ALLOW_SEALING: its seals are refused and the row is UNSUPPORTED "
     "naming fcntl(F_ADD_SEALS) -> EPERM"},
};

const RouteDef kT3MemfdSealed{
    .row = "T3-memfd-sealed",
    .group = "t3",
    .needs = {},
    .legs = kLegs,
    .faults = kFaults,
    .server = {"maps the received sealed memfds and drives the checks", server},
    .client = {"creates and seals two memfds, serves", client},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT3MemfdSealed, 110);

}  // namespace extmem::probe
