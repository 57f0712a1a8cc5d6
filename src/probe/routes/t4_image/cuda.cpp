// T4-image-cuda: the T4 image owner's OPTIMAL R8G8B8A8 export (vk_image_share)
// imported into CUDA in a second process as a mipmapped array
// (cuImportExternalMemory + cuExternalMemoryGetMappedMipmappedArray, level 0),
// read whole into linear device memory with cuMemcpy2D and compared texel by
// texel, then written in a rectangle from linear memory and checked by the
// owner's GPU; two rounds. With --measure, after the rounds, CUDA copy
// throughput through the array (t4_image/cuda_measure.h). docs/probe.md, "T4 image rows".
#include <cstring>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "probe/routes.h"
#include "probe/routes/t4_image/cuda_measure.h"
#include "probe/routes/cuda/route_util.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/t4_image/vk_share.h"
#include "probe/worker/half_end.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

using image::Compare;
using image::Expected;
using image::Rect;

constexpr std::size_t kTexelBytes = 4;  // R8G8B8A8_UNORM

void add_note(Leg& leg, const std::string& note) { leg.note += (leg.note.empty() ? "" : "; ") + note; }

// What CUDA imported, undone in reverse order when the half ends: the
// mipmapped array before the external memory it was mapped from (cuda.h:
// both must be destroyed, the array first). A null handle is not destroyed.
struct CudaImage {
  const cuda::Api* api = nullptr;
  CUexternalMemory memory = nullptr;
  CUmipmappedArray mipmap = nullptr;
  CUarray level0 = nullptr;  ///< owned by `mipmap`, never destroyed itself
  CudaImage() = default;
  CudaImage(const CudaImage&) = delete;
  CudaImage& operator=(const CudaImage&) = delete;
  ~CudaImage() {
    if (mipmap != nullptr) (void)api->cuMipmappedArrayDestroy(mipmap);
    if (memory != nullptr) (void)api->cuDestroyExternalMemory(memory);
  }
};

// One cuMemcpy2D, then cuCtxSynchronize so the copy has finished on the GPU
// before anything is told to the owner. Errors: cu_error of the failing call.
Status copy_2d(const cuda::Api& api, const std::string& what, const CUDA_MEMCPY2D& copy) {
  if (CUresult r = api.cuMemcpy2D(&copy); r != CUDA_SUCCESS) return cuda::cu_error(api, "cuMemcpy2D(" + what + ")", r);
  if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS)
    return cuda::cu_error(api, "cuCtxSynchronize(after " + what + ")", r);
  return {};
}

// The whole level-0 array copied on the GPU into the linear staging buffer
// (rows w*4 bytes apart), then to `host`. Errors: the failing CUDA call.
Status read_array(const cuda::Api& api, const CudaImage& im, const cuda::DeviceBuffer& staging, std::uint32_t w,
                  std::uint32_t h, std::span<std::byte> host) {
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = im.level0;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = staging.ptr();
  c.dstPitch = std::size_t{w} * kTexelBytes;
  c.WidthInBytes = std::size_t{w} * kTexelBytes;
  c.Height = h;
  if (auto s = copy_2d(api, "array -> linear device memory", c); !s) return s;
  if (CUresult r = api.cuMemcpyDtoH(host.data(), staging.ptr(), host.size()); r != CUDA_SUCCESS)
    return cuda::cu_error(api, "cuMemcpyDtoH(linear device memory -> host)", r);
  return {};
}

// `r`'s texels of `e` put into the staging buffer, then copied on the GPU from
// there into the array at (r.x, r.y). Errors: the failing CUDA call.
Status write_rect(const cuda::Api& api, const CudaImage& im, const cuda::DeviceBuffer& staging, const Rect& r,
                  const Expected& e) {
  std::vector<std::byte> host(std::size_t{r.w} * r.h * kTexelBytes);
  image::fill(host, r, e);
  if (CUresult res = api.cuMemcpyHtoD(staging.ptr(), host.data(), host.size()); res != CUDA_SUCCESS)
    return cuda::cu_error(api, "cuMemcpyHtoD(rectangle -> linear device memory)", res);
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = staging.ptr();
  c.srcPitch = std::size_t{r.w} * kTexelBytes;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = im.level0;
  c.dstXInBytes = std::size_t{r.x} * kTexelBytes;
  c.dstY = r.y;
  c.WidthInBytes = std::size_t{r.w} * kTexelBytes;
  c.Height = r.h;
  return copy_2d(api, "linear device memory -> array rectangle", c);
}

// A CUDA refusal at an import step: CUDA_ERROR_NOT_SUPPORTED is the driver
// saying it does not do this (UNSUPPORTED, with the code); anything else is
// the leg's failure, step and code verbatim.
void refused(const cuda::Api& api, const std::string& step, CUresult r, Leg& leg, RouteReport& rep) {
  const Error e = cuda::cu_error(api, step, r);
  fail_leg(leg, e);
  if (r == CUDA_ERROR_NOT_SUPPORTED) rep.facts.unsupported = fmt::format("client: {} -> {}", step, e.code);
}

// --measure, once both rounds have decided the leg: the owner refills the image
// with a seed no round uses and releases it, CUDA times copies through the
// array against a private array (t4_image/cuda_measure.h), reads the array back
// and compares it with the refill, and the owner acquires and checks it as
// after a round, so the image ends as a round ends. Everything that goes wrong
// is logged beside the figures (image_error, image_restore_error) and never
// reaches the leg.
void measure_after_verdict(ChildContext& ctx, const cuda::Api& api, const CudaImage& im,
                           const cuda::DeviceBuffer& staging, const CUDA_ARRAY3D_DESCRIPTOR& shape,
                           const std::string& leg) {
  const Expected kept{image::owner_seed(3)};
  ctx.step("measure: the owner refills the image and releases it");
  if (auto s = image::owner_fill(ctx, kept.base_seed); !s) {
    measure::leg_field(leg, "image_error", "owner refill: " + why_of(s.error()));
    return;
  }
  ctx.step("measure: time CUDA copies through the imported array and through a private array");
  image::cuda_measure_copies(api, leg, im.level0, shape);
  ctx.step("measure: check the content after the copies, the owner checks it");
  const auto w = static_cast<std::uint32_t>(shape.Width), h = static_cast<std::uint32_t>(shape.Height);
  std::vector<std::byte> host(std::size_t{w} * h * kTexelBytes);
  std::string restore;
  auto add = [&](const std::string& what) { restore += (restore.empty() ? "" : "; ") + what; };
  if (auto s = read_array(api, im, staging, w, h, host); !s) {
    add("read back here: " + why_of(s.error()));
    (void)api.cuCtxSynchronize();  // whatever was queued has finished before the owner looks
  } else if (const Compare c = image::compare(host, std::size_t{w} * kTexelBytes, w, h, kept); !c.ok()) {
    add("read back here: " + c.text());
  }
  // The owner checks even when this side's check failed, so it gets the image back.
  if (auto c = image::owner_check(ctx, kept); !c) {
    add("owner check: " + why_of(c.error()));
  } else if (!c->ok()) {
    add("owner read: " + c->text());
  }
  measure::leg_field(leg, "image_restored", restore.empty());
  if (!restore.empty()) measure::leg_field(leg, "image_restore_error", restore);
}

int cuda_image_importer(ChildContext& ctx) {
  RouteReport rep;
  Leg cu{"cudaimage", true};
  auto finish = [&] {
    rep.legs = {cu};
    return end_half(ctx, rep);
  };
  auto setup = await_setup(ctx, rep, "the owner's exported image");
  if (!setup) return 0;
  auto shape = image::shape_from_info(setup->info);
  if (!shape) {
    rep.facts.fatal = why_of(shape.error());
    rep.facts.stop_kind = shape.error().kind;
    return finish();
  }
  const auto& info = setup->info;
  const auto alloc_size = info.allocation_size.value_or(std::uint64_t{0});
  const bool dedicated = info.dedicated.value_or(false);
  const std::string uuid = info.device_uuid.value_or(std::string());
  const std::uint32_t w = shape->width, h = shape->height;
  const bool color_attachment = (shape->usage & VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT) != 0;
  rep.detail.push_back(fmt::format("image={}x{} {} {} usage=0x{:x} allocation={} dedicated={} fd={}", w, h,
                                   info.image->format_name, vk::tiling_name(shape->tiling),
                                   shape->usage, alloc_size, dedicated ? "yes" : "no",
                                   info.fd_target.value_or(std::string("?"))));
  if (w != ctx.params().image_width || h != ctx.params().image_height) {
    rep.facts.fatal = fmt::format("owner announced a {}x{} image, --image-size is {}x{}", w, h,
                                  ctx.params().image_width, ctx.params().image_height);
    return finish();
  }
  if (shape->format != VK_FORMAT_R8G8B8A8_UNORM) {
    rep.facts.fatal = fmt::format("owner announced format {}, this importer maps R8G8B8A8_UNORM only",
                                  static_cast<int>(shape->format));
    return finish();
  }

  // The CUDA device with the owner's deviceUUID (an opaque fd is valid only there);
  // the staging buffer holds the whole image as linear memory.
  auto side = open_cuda(ctx, rep.facts, uuid, std::size_t{w} * h * kTexelBytes);
  if (!side) return finish();
  const cuda::Api& api = *side->api;
  cu.attempted = true;

  CudaImage im;
  im.api = &api;
  auto dup = ImportDup::of(setup->fd.get());
  if (!dup) {
    fail_leg(cu, dup.error());
    return finish();
  }
  const std::string import_step = "cuImportExternalMemory(OPAQUE_FD image)";
  ctx.step(import_step);
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = dup->number();
  desc.size = alloc_size;  // the whole Vulkan allocation, bytes
  // CUDA must be told what Vulkan did (cuda.h, CUDA_EXTERNAL_MEMORY_DEDICATED).
  desc.flags = dedicated ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0;
  CUresult r = api.cuImportExternalMemory(&im.memory, &desc);
  // A successful import owns the fd (cuda.h, cuImportExternalMemory).
  rep.detail.push_back("cudaimage " + dup->settle(r == CUDA_SUCCESS));
  if (r != CUDA_SUCCESS) {
    im.memory = nullptr;
    refused(api, import_step, r, cu, rep);
    return finish();
  }

  // The array must describe the image as Vulkan created it: four unsigned
  // 8-bit channels, its extent, one level, and COLOR_ATTACHMENT when the
  // image has that usage (cuda.h, cuExternalMemoryGetMappedMipmappedArray).
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC ad{};
  ad.offset = 0;
  ad.arrayDesc.Width = w;
  ad.arrayDesc.Height = h;
  ad.arrayDesc.Depth = 0;  // 2D
  ad.arrayDesc.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  ad.arrayDesc.NumChannels = 4;
  ad.arrayDesc.Flags = color_attachment ? CUDA_ARRAY3D_COLOR_ATTACHMENT : 0;
  ad.numLevels = 1;
  const std::string map_step = fmt::format("cuExternalMemoryGetMappedMipmappedArray({}x{} UNSIGNED_INT8 x4, flags=0x{:x}, "
                                           "1 level)",
                                           w, h, ad.arrayDesc.Flags);
  ctx.step(map_step);
  if (r = api.cuExternalMemoryGetMappedMipmappedArray(&im.mipmap, im.memory, &ad); r != CUDA_SUCCESS) {
    im.mipmap = nullptr;
    refused(api, map_step, r, cu, rep);
    return finish();
  }
  ctx.step("cuMipmappedArrayGetLevel(0)");
  if (r = api.cuMipmappedArrayGetLevel(&im.level0, im.mipmap, 0); r != CUDA_SUCCESS) {
    fail_leg(cu, cuda::cu_error(api, "cuMipmappedArrayGetLevel(0)", r));
    return finish();
  }

  bool reads_ok = true, writes_ok = true;
  std::vector<std::byte> host(std::size_t{w} * h * kTexelBytes);
  for (int round = 1; round <= 2; ++round) {
    // The owner released the image to VK_QUEUE_FAMILY_EXTERNAL and waited for
    // its queue before it answered; CUDA has no acquire, it just copies.
    const std::string read_step = fmt::format("round {}: cuMemcpy2D the array into linear memory", round);
    ctx.step(read_step);
    if (auto s = read_array(api, im, *side->staging, w, h, host); !s) {
      fail_leg(cu, s.error());
      return finish();
    }
    ctx.step(fmt::format("round {}: compare every texel with the owner's pattern", round));
    const Compare got = image::compare(host, std::size_t{w} * kTexelBytes, w, h, Expected{image::owner_seed(round)});
    if (!got.ok()) {
      reads_ok = false;
      add_note(cu, fmt::format("round {} CUDA read: {}", round, got.text()));
    }

    const Rect rect = image::round_rect(w, h, round);
    const Expected after{image::owner_seed(round), rect, image::importer_seed(round)};
    ctx.step(fmt::format("round {}: cuMemcpy2D the importer's rectangle into the array, cuCtxSynchronize", round));
    if (auto s = write_rect(api, im, *side->staging, rect, after); !s) {
      fail_leg(cu, s.error());
      return finish();
    }
    ctx.step(fmt::format("round {}: the owner acquires and checks the rectangle and the rest", round));
    auto checked = image::owner_check(ctx, after);
    if (!checked) {
      fail_leg(cu, checked.error());
      return finish();
    }
    if (!checked->ok()) {
      writes_ok = false;
      add_note(cu, fmt::format("round {} owner read: {}", round, checked->text()));
    }
    if (round == 1) {
      ctx.step("round 2: the owner refills the image with a new seed and releases it");
      if (auto s = image::owner_fill(ctx, image::owner_seed(2)); !s) {
        fail_leg(cu, s.error());
        return finish();
      }
    }
  }
  cu.read_ok = reads_ok;
  cu.write_ok = writes_ok;
  if (reads_ok && writes_ok && measure::enabled())
    measure_after_verdict(ctx, api, im, *side->staging, ad.arrayDesc, cu.name);
  const Rect r1 = image::round_rect(w, h, 1), r2 = image::round_rect(w, h, 2);
  rep.detail.push_back(fmt::format("rounds=2 rect1=({},{} {}x{}) rect2=({},{} {}x{}) array=UNSIGNED_INT8x4 flags=0x{:x} "
                                   "handover=GENERAL via VK_QUEUE_FAMILY_EXTERNAL (owner), cuCtxSynchronize (CUDA)",
                                   r1.x, r1.y, r1.w, r1.h, r2.x, r2.y, r2.w, r2.h, ad.arrayDesc.Flags));
  return finish();
}

constexpr std::string_view kCudaImageExtensions[] = {VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME};
constexpr LegDef kCudaImageLegs[] = {
    {"cudaimage", true,
     "CUDA's copy of the imported array matches every texel of the owner's GPU fill and the owner sees CUDA's "
     "rectangle (rest intact), two rounds"},
};

const RouteDef kT4ImageCuda{
    .row = "T4-image-cuda",
    .group = "t4",
    .needs = {.extensions = kCudaImageExtensions, .cuda = true},
    .legs = kCudaImageLegs,
    .server = {"creates an OPTIMAL image, fills it on the GPU, exports an opaque fd, serves checks",
               [](ChildContext& c) { return image::owner_serve(c, VK_IMAGE_TILING_OPTIMAL); }},
    .client = {"imports the fd into CUDA as a mipmapped array, compares every texel, writes a rectangle, drives",
               cuda_image_importer},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT4ImageCuda, 220);

}  // namespace extmem::probe
