// T1-opaque-fd-foreign-fd: what the driver does with an OPAQUE_FD import of an
// fd that no driver exported (a memfd, a file in a tmpfs). An opaque fd is only
// defined as something a Vulkan driver exported, so a refusal with a code is the
// conformant answer; an import that succeeds is a finding (the driver took
// memory it cannot know the layout of), and a crash is the worker's death, which
// supervision turns into this row's FAIL naming the step. docs/probe.md,
// "T1-opaque-fd-foreign-fd".
//
// How the verdict reads: each foreign fd is one decisive leg whose round trip
// means "the driver gave the conformant answer". A refusal reads `rt` with
// `refused=<VkResult>` in the detail, so the row is OK when every foreign fd is
// refused; an accepted import reads `no` with the step and `VK_SUCCESS` as its
// code, and the detail says whether the import then aliased the fd's bytes.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/pattern.h"
#include "extmem/os/fd.h"
#include "probe/routes.h"
#include "probe/worker/half_end.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/route_util.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kForeignLegs[] = {
    {"memfd", true, "an OPAQUE_FD import of a plain memfd is refused with a code (rt = the conformant refusal)"},
    {"tmpfs", true, "an OPAQUE_FD import of a tmpfs file is refused with a code (rt = the conformant refusal)"},
    {"afterwards", false, "a plain allocation on the same device succeeds after the foreign imports"},
};

constexpr auto kOpaque = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;

// Imports a dup of `fd` (`what`: "memfd", "tmpfs file") as OPAQUE_FD into a HOST_VISIBLE type and
// records the answer in `leg` and the detail. Region A of the fd holds a pattern first, so an
// accepted import can be checked for aliasing.
void try_foreign(ChildContext& ctx, const vk::Device& dev, int fd, const std::string& what, Leg& leg, RouteReport& rep,
                 bool write_payload = true) {
  const Layout& layout = ctx.layout();
  leg.attempted = true;
  if (write_payload) {
    ctx.step(fmt::format("mmap the {} and write region A", what));
    auto map = os::Mapping::map(fd, layout.size, MAP_SHARED);
    if (!map) {
      fail_leg(leg, map.error());
      return;
    }
    pattern::fill(layout.region(map->bytes(), Region::A), seed_of(Region::A));
  }
  auto dup = ImportDup::of(fd);
  if (!dup) {
    fail_leg(leg, dup.error());
    return;
  }
  const int type = dev.find_memory_type(~0u, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  vk::AllocationRequest req;
  req.size = layout.size;
  req.external_handle_types = kOpaque;
  req.import_fd = dup->number();
  req.import_fd_type = kOpaque;
  req.allocation_size = layout.size;
  req.memory_type_index = type;
  req.dedicated = 0;
  const std::string step = fmt::format("vkAllocateMemory(import OPAQUE_FD of a {} no driver exported)", what);
  ctx.step(step);
  vk::AllocationFailure af;
  auto imported = dev.create_buffer(req, &af);
  const std::string owner = dup->settle(imported || af.memory_allocated);
  if (!imported && !af.at_allocate) {
    // The probe never reached the import itself (vkCreateBuffer, the memory type): not an answer.
    fail_leg(leg, af.error);
    rep.detail.push_back(fmt::format("{}: not tried ({} -> {}) {}", leg.name, af.error.step, af.error.code, owner));
    return;
  }
  if (!imported) {
    // The conformant answer: the driver refused a handle it never exported.
    leg.read_ok = leg.write_ok = true;
    rep.detail.push_back(fmt::format("{}: refused={} {}", leg.name, af.error.code, owner));
    return;
  }
  // Accepted: a finding. Say whether the import then showed the fd's own bytes.
  leg.failed_step = step;
  leg.code = "VK_SUCCESS";
  std::string aliases = write_payload ? "unknown (not mapped)" : "not checked (no payload written)";
  if (imported->mapped != nullptr && write_payload) {
    ctx.step(fmt::format("compare region A of the accepted {} import", what));
    auto view = std::span<const std::byte>(imported->mapped, layout.size);
    aliases = pattern::first_mismatch(layout.region(view, Region::A), seed_of(Region::A)) ? "no" : "yes";
  }
  rep.detail.push_back(
      fmt::format("{}: accepted (a finding: memoryType={} aliasesFdBytes={}) {}", leg.name, type, aliases, owner));
}

// After the foreign imports: does a plain allocation on the same device still work? A
// refusal that leaves the device unable to allocate would break whatever the process
// does next (NVIDIA 580: the next vkAllocateMemory failed, measured in a warm worker).
void try_afterwards(ChildContext& ctx, const vk::Device& dev, Leg& leg, RouteReport& rep) {
  leg.attempted = true;
  vk::AllocationRequest req;
  req.size = ctx.layout().size;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  req.dedicated = 0;
  ctx.step("vkAllocateMemory after the foreign imports");
  vk::AllocationFailure af;
  auto plain = dev.create_buffer(req, &af);
  if (!plain) {
    fail_leg(leg, af.error);
    rep.detail.push_back(fmt::format("afterwards: a plain {}-byte allocation -> {} (a finding)", req.size, af.error.code));
    return;
  }
  leg.read_ok = leg.write_ok = true;
  rep.detail.push_back(fmt::format("afterwards: a plain {}-byte allocation -> VK_SUCCESS", req.size));
}

int drive(ChildContext& ctx) {
  Leg memfd = report_leg({kForeignLegs, "memfd"});
  Leg tmpfs = report_leg({kForeignLegs, "tmpfs"});
  Leg afterwards = report_leg({kForeignLegs, "afterwards"});
  DrivingHalf half(ctx, {&memfd, &tmpfs, &afterwards}, Peer::none);
  RouteReport& rep = half.rep;
  auto d = open_device(ctx, {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME});
  if (!d) {
    stop_row(rep.facts, d.error().kind, why_of(d.error()));
    return half.finish();
  }
  const vk::Device& dev = **d;
  if (!dev.has(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME)) {
    rep.facts.unsupported = "VK_KHR_external_memory_fd not exposed by the device";
    return half.finish();
  }
  // A driver that imports no opaque fd at all has no answer to give here.
  if (!advertised(dev, kOpaque, VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT)) {
    rep.facts.unsupported = "OPAQUE_FD is not advertised importable";
    return half.finish();
  }
  ctx.step("memfd_create");
  // Negative control (test-only, EXTMEM_TEST_FAULT=T1-opaque-fd-foreign-fd:server:memfd_create:exported):
  // the "memfd" is an fd this driver did export, which it must accept, so the row must FAIL.
  if (ctx.test_fault("memfd_create", "exported")) {
    vk::AllocationRequest req;
    req.size = ctx.layout().size;
    req.external_handle_types = kOpaque;
    req.export_memory = true;
    req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    req.dedicated = 0;
    auto own = dev.create_buffer(req);
    VkMemoryGetFdInfoKHR gi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
    int raw = -1;
    if (own) {
      gi.memory = own->memory;
      gi.handleType = kOpaque;
      if (dev.fn().vkGetMemoryFdKHR(dev.handle(), &gi, &raw) != VK_SUCCESS) raw = -1;
    }
    os::UniqueFd exported(raw);
    if (!exported.valid()) {
      fail_leg(memfd, Error{"test fault: export an opaque fd", ErrorKind::driver, "no fd", {}});
    } else {
      // No payload write: region A of a lavapipe fd is its header, not the allocation.
      try_foreign(ctx, dev, exported.get(), "memfd", memfd, rep, /*write_payload=*/false);
    }
  } else if (auto fd = os::create_memfd("extmem-probe-foreign", ctx.layout().size); !fd) {
    fail_leg(memfd, fd.error());
  } else {
    try_foreign(ctx, dev, fd->get(), "memfd", memfd, rep);
  }
  ctx.step("create a tmpfs file");
  std::string where;
  if (auto fd = tmpfs_file(ctx.layout().size, "extmem-foreign", where); !fd) {
    fail_leg(tmpfs, fd.error());
  } else {
    rep.detail.push_back("tmpfs file in " + where);
    try_foreign(ctx, dev, fd->get(), "tmpfs file", tmpfs, rep);
  }
  try_afterwards(ctx, dev, afterwards, rep);
  return half.finish();
}

constexpr FaultDef kForeignFaults[] = {
    {"exported", Role::server, "memfd_create",
     "the \"memfd\" is an fd this driver did export, which it must accept: the memfd leg must not pass "
     "(PARTIAL)"},
};

const RouteDef kT1OpaqueFdForeignFd{
    .row = "T1-opaque-fd-foreign-fd",
    .group = "t1",
    .needs = {.extensions = needs::kFdMemory, .handle_types = needs::kOpaqueFdImportable},
    .legs = kForeignLegs,
    .faults = kForeignFaults,
    .server = {"imports a memfd and a tmpfs file no driver exported as OPAQUE_FD, expects refusals", drive},
    .client = {},
    .measured = false,
    .retires_worker = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT1OpaqueFdForeignFd, 50);

}  // namespace extmem::probe
