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
#include "probe/routes/t4_image/measure.h"
#include "probe/routes/t4_image/round.h"
#include "probe/routes/cuda/route_util.h"
#include "probe/routes/vk/export.h"
#include "probe/routes/t4_image/vk_share.h"
#include "probe/worker/half_end.h"
#include "probe/worker/import_dup.h"
#include "probe/worker/measure.h"
#include "probe/worker/route_util.h"
#include "probe/routes/requirements.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr LegDef kCudaImageLegs[] = {
    {"cudaimage", true,
     "CUDA's copy of the imported array matches every texel of the owner's GPU fill and the owner sees CUDA's "
     "rectangle (rest intact), two rounds"},
};

using image::Compare;
using image::Expected;
using image::Rect;

using image::kTexelBytes;

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
    image::log_error(leg, "owner refill: " + why_of(s.error()));
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
  image::log_restored(leg, restore);
}

// The imported image as CUDA sees it: the external memory (the whole Vulkan
// allocation, with the owner's dedicated flag: cuda.h,
// CUDA_EXTERNAL_MEMORY_DEDICATED), mapped as a mipmapped array that describes
// the image as Vulkan created it (four unsigned 8-bit channels, its extent,
// one level, COLOR_ATTACHMENT when the image has that usage: cuda.h,
// cuExternalMemoryGetMappedMipmappedArray), and its level 0. Returns false with
// the leg's failure (and for CUDA_ERROR_NOT_SUPPORTED the row's facts) set.
bool import_array(ChildContext& ctx, const cuda::Api& api, const image::ImportedSetup& in, CudaImage& im,
                  CUDA_ARRAY3D_DESCRIPTOR& array, RouteReport& rep, Leg& cu) {
  auto dup = ImportDup::of(in.setup.fd.get());
  if (!dup) {
    fail_leg(cu, dup.error());
    return false;
  }
  const std::string import_step = "cuImportExternalMemory(OPAQUE_FD image)";
  ctx.step(import_step);
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  desc.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  desc.handle.fd = dup->number();
  desc.size = in.setup.info.allocation_size.value_or(std::uint64_t{0});  // bytes
  desc.flags = in.setup.info.dedicated.value_or(false) ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0;
  CUresult r = api.cuImportExternalMemory(&im.memory, &desc);
  // A successful import owns the fd (cuda.h, cuImportExternalMemory).
  rep.detail.push_back("cudaimage " + dup->settle(r == CUDA_SUCCESS));
  if (r != CUDA_SUCCESS) {
    im.memory = nullptr;
    refused(api, import_step, r, cu, rep);
    return false;
  }
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC ad{};
  ad.offset = 0;
  ad.arrayDesc.Width = in.shape.width;
  ad.arrayDesc.Height = in.shape.height;
  ad.arrayDesc.Depth = 0;  // 2D
  ad.arrayDesc.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  ad.arrayDesc.NumChannels = 4;
  ad.arrayDesc.Flags = (in.shape.usage & VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT) != 0 ? CUDA_ARRAY3D_COLOR_ATTACHMENT : 0;
  ad.numLevels = 1;
  array = ad.arrayDesc;
  const std::string map_step = fmt::format("cuExternalMemoryGetMappedMipmappedArray({}x{} UNSIGNED_INT8 x4, flags=0x{:x}, "
                                           "1 level)",
                                           in.shape.width, in.shape.height, ad.arrayDesc.Flags);
  ctx.step(map_step);
  if (r = api.cuExternalMemoryGetMappedMipmappedArray(&im.mipmap, im.memory, &ad); r != CUDA_SUCCESS) {
    im.mipmap = nullptr;
    refused(api, map_step, r, cu, rep);
    return false;
  }
  ctx.step("cuMipmappedArrayGetLevel(0)");
  if (r = api.cuMipmappedArrayGetLevel(&im.level0, im.mipmap, 0); r != CUDA_SUCCESS) {
    fail_leg(cu, cuda::cu_error(api, "cuMipmappedArrayGetLevel(0)", r));
    return false;
  }
  return true;
}

// CUDA's side of a round: the whole array copied into linear memory (the owner
// released the image to VK_QUEUE_FAMILY_EXTERNAL and waited for its queue
// before it answered; CUDA has no acquire, it just copies), then the rectangle
// copied in from linear memory and cuCtxSynchronize.
image::Importer cuda_importer(ChildContext& ctx, const cuda::Api& api, const CudaImage& im,
                              const cuda::DeviceBuffer& staging, std::uint32_t w, std::uint32_t h,
                              std::vector<std::byte>& host) {
  image::Importer imp;
  imp.who = "CUDA";
  imp.read = [&, w, h](int round) -> Result<std::span<const std::byte>> {
    ctx.step(fmt::format("round {}: cuMemcpy2D the array into linear memory", round));
    if (auto s = read_array(api, im, staging, w, h, host); !s) return s.error();
    return std::span<const std::byte>(host);
  };
  imp.write = [&](int round, const Rect& rect) -> Result<Expected> {
    const Expected after{image::owner_seed(round), rect, image::importer_seed(round)};
    ctx.step(fmt::format("round {}: cuMemcpy2D the importer's rectangle into the array, cuCtxSynchronize", round));
    if (auto s = write_rect(api, im, staging, rect, after); !s) return s.error();
    return after;
  };
  return imp;
}

int cuda_image_importer(ChildContext& ctx) {
  Leg cu = report_leg({kCudaImageLegs, "cudaimage"});
  DrivingHalf half(ctx, {&cu});
  RouteReport& rep = half.rep;
  auto in = image::await_image(ctx, half);
  if (!in) return half.finish();
  const auto& info = in->setup.info;
  const std::uint32_t w = in->shape.width, h = in->shape.height;
  rep.detail.push_back(fmt::format("image={}x{} {} {} usage=0x{:x} allocation={} dedicated={} fd={}", w, h,
                                   info.image->format_name, vk::tiling_name(in->shape.tiling), in->shape.usage,
                                   info.allocation_size.value_or(std::uint64_t{0}),
                                   info.dedicated.value_or(false) ? "yes" : "no",
                                   info.fd_target.value_or(std::string("?"))));
  if (in->shape.format != VK_FORMAT_R8G8B8A8_UNORM) {
    rep.facts.fatal = fmt::format("owner announced format {}, this importer maps R8G8B8A8_UNORM only",
                                  static_cast<int>(in->shape.format));
    return half.finish();
  }
  // The CUDA device with the owner's deviceUUID (an opaque fd is valid only there);
  // the staging buffer holds the whole image as linear memory.
  auto side = open_cuda(ctx, rep.facts, info.device_uuid.value_or(std::string()), std::size_t{w} * h * kTexelBytes);
  if (!side) return half.finish();
  const cuda::Api& api = *side->api;
  cu.attempted = true;
  CudaImage im;
  im.api = &api;
  CUDA_ARRAY3D_DESCRIPTOR array{};
  if (!import_array(ctx, api, *in, im, array, rep, cu)) return half.finish();

  std::vector<std::byte> host(std::size_t{w} * h * kTexelBytes);
  const image::Importer imp = cuda_importer(ctx, api, im, *side->staging, w, h, host);
  if (!image::run_rounds(ctx, imp, image::remote_owner(ctx), w, h, cu)) return half.finish();
  if (cu.read_ok && cu.write_ok && measure::enabled())
    measure_after_verdict(ctx, api, im, *side->staging, array, cu.name);
  rep.detail.push_back(fmt::format("{} array=UNSIGNED_INT8x4 flags=0x{:x} handover=GENERAL via "
                                   "VK_QUEUE_FAMILY_EXTERNAL (owner), cuCtxSynchronize (CUDA)",
                                   image::rounds_detail(w, h), array.Flags));
  return half.finish();
}

constexpr FaultDef kCudaImageFaults[] = {image::kDecoyFault, image::transpose_fault(Role::client),
                                        image::mirror_fault(Role::client)};

const RouteDef kT4ImageCuda{
    .row = "T4-image-cuda",
    .group = "t4",
    .needs = {.extensions = needs::kFdMemory, .cuda = true},
    .legs = kCudaImageLegs,
    .faults = kCudaImageFaults,
    .server = {"creates an OPTIMAL image, fills it on the GPU, exports an opaque fd, serves checks",
               [](ChildContext& c) { return image::owner_serve(c, VK_IMAGE_TILING_OPTIMAL); }},
    .client = {"imports the fd into CUDA as a mipmapped array, compares every texel, writes a rectangle, drives",
               cuda_image_importer},
    .passes_fds = true};

}  // namespace EXTMEM_ROUTE_FILE
}  // namespace

EXTMEM_ROUTE(kT4ImageCuda, 220);

}  // namespace extmem::probe
