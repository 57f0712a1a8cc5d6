#include "probe/routes/t3/host_backings.h"

#include "probe/routes.h"

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
#include "probe/worker/gpu_access.h"
#include "probe/routes.h"
#include "probe/routes/t3/host_import.h"
#include "probe/worker/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

void round_trip(ChildContext& ctx, const vk::Device& device, std::span<std::byte> view, std::size_t bytes, Leg& leg,
                RouteReport& rep, std::vector<std::string>& refused) {
  const Layout& layout = ctx.layout();
  pattern::fill(layout.region(view, Region::A), seed_of(Region::A));
  ctx.step(fmt::format("vkAllocateMemory(import HOST_ALLOCATION, {} backing)", leg.name));
  auto buf = import_host_pointer(device, view.data(), bytes, layout.size, leg, rep, /*decides_row=*/false);
  if (!buf) {
    leg.decisive = false;  // a refused backing is a finding, not a failure of the row
    refused.push_back(fmt::format("{} ({} -> {})", leg.name, leg.failed_step, leg.code));
    return;
  }
  ctx.step(fmt::format("GPU round trip through the {} backing", leg.name));
  gpu_access(device, buf->buffer, layout, Region::A, leg);
  if (leg.failed_step.empty()) confirm_local(view, layout, Region::E, leg);
  // The far side is this process's own CPU view of the backing.
  whole::LocalFar far(view, whole::plan_for(layout.size));
  gpu_whole(ctx, device, buf->buffer, layout.size, far.as_far(), leg);
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

void probe_extra_backings(ChildContext& ctx, const vk::Device& device, std::size_t alignment, Leg& anon, Leg& file,
                          RouteReport& rep) {
  const std::size_t bytes = (ctx.layout().size + alignment - 1) / alignment * alignment;
  std::vector<std::string> refused;

  ctx.step("anonymous private backing");
  if (auto map = os::Mapping::map_aligned(-1, bytes, alignment); !map) {
    fail_leg(anon, map.error());
  } else {
    round_trip(ctx, device, map->bytes(), bytes, anon, rep, refused);
  }

  ctx.step("shared tmpfs file backing");
  std::string where;
  if (auto fd = tmpfs_file(bytes, "extmem-backing", where); !fd) {
    fail_leg(file, fd.error());
  } else if (auto map = os::Mapping::map_aligned(fd->get(), bytes, alignment); !map) {
    fail_leg(file, map.error());
  } else {
    rep.detail.push_back("hostfile backing in " + where);
    round_trip(ctx, device, map->bytes(), bytes, file, rep, refused);
  }
  if (!refused.empty()) rep.detail.push_back(fmt::format("refused backings: {}", fmt::join(refused, ", ")));
}

}  // namespace extmem::probe
