#include "probe/routes/t4_image/cuda_measure.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "probe/routes/t4_image/measure.h"
#include "probe/routes/t4_image/vk_share.h"
#include "probe/worker/measure.h"
#include "probe/routes/route_file.h"

namespace extmem::probe::image {
namespace {
namespace EXTMEM_ROUTE_FILE {

// The driver objects this measurement creates, destroyed in reverse order of
// creation when it returns; a null handle is not destroyed. The stream is
// synchronised before anything on it goes away.
struct Owned {
  const cuda::Api& api;
  CUarray private_array = nullptr;
  CUstream stream = nullptr;
  CUevent start = nullptr, end = nullptr;
  explicit Owned(const cuda::Api& a) : api(a) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (stream != nullptr) (void)api.cuStreamSynchronize(stream);
    if (end != nullptr) (void)api.cuEventDestroy(end);
    if (start != nullptr) (void)api.cuEventDestroy(start);
    if (stream != nullptr) (void)api.cuStreamDestroy(stream);
    if (private_array != nullptr) (void)api.cuArrayDestroy(private_array);
  }
};

// Whole-array copies on a stream of its own: out of an array into linear
// memory or back in, one at a time or timed back to back.
struct Copies {
  const cuda::Api& api;
  Owned& own;
  std::size_t row = 0, h = 0;  // bytes per row, rows

  // One whole-array copy queued on the stream: out of `array` into `linear`, or back in.
  Status queue(CUarray array, bool out_of_array, CUdeviceptr linear) const {
    CUDA_MEMCPY2D c{};
    if (out_of_array) {
      c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
      c.srcArray = array;
      c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
      c.dstDevice = linear;
      c.dstPitch = row;
    } else {
      c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
      c.srcDevice = linear;
      c.srcPitch = row;
      c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
      c.dstArray = array;
    }
    c.WidthInBytes = row;
    c.Height = h;
    if (CUresult res = api.cuMemcpy2DAsync(&c, own.stream); res != CUDA_SUCCESS)
      return cuda::cu_error(api, out_of_array ? "cuMemcpy2DAsync(array -> linear)" : "cuMemcpy2DAsync(linear -> array)",
                            res);
    return {};
  }
  Status sync() const {
    if (CUresult res = api.cuStreamSynchronize(own.stream); res != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuStreamSynchronize", res);
    return {};
  }
  Status copy_and_wait(CUarray array, bool out_of_array, CUdeviceptr linear) const {
    if (auto s = queue(array, out_of_array, linear); !s) return s;
    return sync();
  }
  // `copies` copies of kind `k` against `partner`. Copies on one stream run one
  // after another, so back to back they never overlap; the events bracket exactly them.
  Result<measure::Timed> timed(CUarray shared, ImageCopy k, unsigned copies, CUdeviceptr partner) const {
    if (auto s = sync(); !s) return s.error();  // nothing queued before may count in the sample
    const bool out = k == ImageCopy::shared_out || k == ImageCopy::private_out;
    CUarray array = k == ImageCopy::shared_out || k == ImageCopy::shared_in ? shared : own.private_array;
    if (CUresult res = api.cuEventRecord(own.start, own.stream); res != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuEventRecord(start)", res);
    for (unsigned c = 0; c < copies; ++c)
      if (auto s = queue(array, out, partner); !s) return s.error();
    if (CUresult res = api.cuEventRecord(own.end, own.stream); res != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuEventRecord(end)", res);
    if (CUresult res = api.cuEventSynchronize(own.end); res != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuEventSynchronize(end)", res);
    float ms = 0;
    if (CUresult res = api.cuEventElapsedTime(&ms, own.start, own.end); res != CUDA_SUCCESS)
      return cuda::cu_error(api, "cuEventElapsedTime", res);
    return measure::Timed{static_cast<double>(ms) * 1e-3, measure::clocks::cuda_event};
  }
};

// The baseline: an array of the same shape in the device's own memory. Flags
// such as COLOR_ATTACHMENT describe what an external image allows; where the
// driver takes them only for a mapped array, the plain array is the baseline.
// Then a stream of its own that synchronises with the legacy default stream
// (flags 0), so the route's own copies on the default stream are ordered with
// these, and two timing events on it. Returns what failed, or nullopt.
std::optional<std::pair<std::string, Error>> create_objects(const cuda::Api& api, const CUDA_ARRAY3D_DESCRIPTOR& shape,
                                                            Owned& own, unsigned& private_flags) {
  CUDA_ARRAY3D_DESCRIPTOR pdesc = shape;
  CUresult r = api.cuArray3DCreate(&own.private_array, &pdesc);
  if (r != CUDA_SUCCESS && pdesc.Flags != 0) {
    own.private_array = nullptr;
    pdesc.Flags = 0;
    r = api.cuArray3DCreate(&own.private_array, &pdesc);
  }
  if (r != CUDA_SUCCESS) {
    own.private_array = nullptr;
    const std::string step = fmt::format("cuArray3DCreate({}x{} UNSIGNED_INT8 x4, flags=0x{:x})", shape.Width,
                                         shape.Height, pdesc.Flags);
    return std::pair{std::string("private array"), cuda::cu_error(api, step, r)};
  }
  private_flags = pdesc.Flags;
  if (r = api.cuStreamCreate(&own.stream, 0); r != CUDA_SUCCESS) {
    own.stream = nullptr;
    return std::pair{std::string("stream"), cuda::cu_error(api, "cuStreamCreate", r)};
  }
  for (CUevent* e : {&own.start, &own.end}) {
    if (r = api.cuEventCreate(e, CU_EVENT_DEFAULT); r != CUDA_SUCCESS) {
      *e = nullptr;
      return std::pair{std::string("timing events"), cuda::cu_error(api, "cuEventCreate", r)};
    }
  }
  return std::nullopt;
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

void cuda_measure_copies(const cuda::Api& api, const std::string& leg, CUarray shared,
                         const CUDA_ARRAY3D_DESCRIPTOR& shape) {
  if (!measure::enabled()) return;
  LegFigures& m = *measure::leg(leg);
  auto failed = [&](const std::string& what, const Error& e) { m.image.error = what + ": " + measure::step_and_code(e); };
  if (shape.Depth != 0 || shape.Format != CU_AD_FORMAT_UNSIGNED_INT8 || shape.NumChannels != 4 || shape.Width == 0 ||
      shape.Height == 0 || shape.Width > 65536 || shape.Height > 65536) {
    m.image.error = fmt::format("array shape: {}x{}x{} format 0x{:x} x{} is not a 2D UNSIGNED_INT8 x4 array",
                                shape.Width, shape.Height, shape.Depth, static_cast<unsigned>(shape.Format),
                                shape.NumChannels);
    return;
  }
  const std::size_t w = shape.Width, h = shape.Height, row = w * kTexelBytes, bytes = row * h;
  log_extent(leg, static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h));

  // Linear partners: `keep` holds the shared texels meanwhile, `partner` is the other end of
  // every timed copy.
  std::unique_ptr<cuda::DeviceBuffer> keep, partner;
  for (auto* b : {&keep, &partner}) {
    auto a = cuda::DeviceBuffer::allocate(api, bytes);
    if (!a) return failed("partner buffer", a.error());
    *b = std::move(*a);
  }
  Owned own(api);
  unsigned private_flags = 0;
  if (auto f = create_objects(api, shape, own, private_flags)) return failed(f->first, f->second);
  m.image.private_array_flags = private_flags;
  const Copies copies{api, own, row, h};
  if (auto s = copies.copy_and_wait(shared, true, keep->ptr()); !s) return failed("save the shared array", s.error());
  const bool sampled = sample_copies(leg, bytes, [&](ImageCopy k, unsigned n) {
    return copies.timed(shared, k, n, partner->ptr());
  });

  // Put the shared texels back (the in-copies overwrote them), whatever happened above: after
  // a failed sample the stream may still hold its copies, so it is drained first.
  (void)api.cuStreamSynchronize(own.stream);
  if (auto s = copies.copy_and_wait(shared, false, keep->ptr()); !s) {
    const std::string why = "restore the shared array: " + measure::step_and_code(s.error());
    // A failed sample left its own error first.
    m.image.error = sampled ? why : m.image.error.value_or(std::string()) + "; " + why;
  }
}

}  // namespace extmem::probe::image
