// image::cuda_measure_copies (src/probe/routes/t4_image/cuda_measure.h) against a
// fake driver table: cuda::Api filled with functions of this file, which keep
// a token of "content" per array and buffer, count the copies between the two
// event records and refuse what a test asks them to. No CUDA needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/api.h"
#include "probe/routes/t4_image/cuda_measure.h"
#include "probe/measure_codec.h"
#include "probe/worker/measure.h"

namespace {

using namespace extmem::cudrv;
using nlohmann::json;
namespace cuda = extmem::cuda;
namespace image = extmem::probe::image;
namespace measure = extmem::probe::measure;

// The fake driver's state: one per test (Fake's constructor resets it).
struct State {
  std::map<std::uintptr_t, int> content;  // array handle or device address -> what it holds
  std::uintptr_t next = 0x1000;
  int copies_in_flight = 0;               // copies queued since the start event
  bool timing = false;
  double ms_per_copy = 1.0;
  int copy_calls = 0;
  int fail_copy_call = -1;                // the cuMemcpy2DAsync call (0-based) that fails
  CUresult fail_event_create = CUDA_SUCCESS;
  bool refuse_array_flags = false;
  unsigned created_flags = ~0u;
  int arrays_live = 0, streams_live = 0, events_live = 0, buffers_live = 0;
};
State g;

std::uintptr_t key_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

CUresult get_error_name(CUresult r, const char** name) {
  *name = cuda::known_error_name(r);
  return *name != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult mem_alloc(CUdeviceptr* p, std::size_t) {
  *p = g.next += 0x1000;
  g.content[*p] = 0;
  ++g.buffers_live;
  return CUDA_SUCCESS;
}
CUresult mem_free(CUdeviceptr) {
  --g.buffers_live;
  return CUDA_SUCCESS;
}
CUresult array_create(CUarray* a, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  if (g.refuse_array_flags && d->Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  g.created_flags = d->Flags;
  *a = reinterpret_cast<CUarray>(g.next += 0x1000);
  g.content[key_of(*a)] = 0;
  ++g.arrays_live;
  return CUDA_SUCCESS;
}
CUresult array_destroy(CUarray) {
  --g.arrays_live;
  return CUDA_SUCCESS;
}
CUresult stream_create(CUstream* s, unsigned) {
  *s = reinterpret_cast<CUstream>(g.next += 0x1000);
  ++g.streams_live;
  return CUDA_SUCCESS;
}
CUresult stream_destroy(CUstream) {
  --g.streams_live;
  return CUDA_SUCCESS;
}
CUresult stream_sync(CUstream) { return CUDA_SUCCESS; }
CUresult event_create(CUevent* e, unsigned) {
  if (g.fail_event_create != CUDA_SUCCESS) return g.fail_event_create;
  *e = reinterpret_cast<CUevent>(g.next += 0x1000);
  ++g.events_live;
  return CUDA_SUCCESS;
}
CUresult event_destroy(CUevent) {
  --g.events_live;
  return CUDA_SUCCESS;
}
// The first event recorded after the events were made is the start: counting begins there.
CUevent g_start = nullptr;
CUresult event_record(CUevent e, CUstream) {
  if (g_start == nullptr) g_start = e;
  if (e == g_start) g.copies_in_flight = 0, g.timing = true;
  else g.timing = false;
  return CUDA_SUCCESS;
}
CUresult event_sync(CUevent) { return CUDA_SUCCESS; }
CUresult elapsed(float* ms, CUevent, CUevent) {
  *ms = static_cast<float>(g.copies_in_flight * g.ms_per_copy);
  return CUDA_SUCCESS;
}
CUresult memcpy_2d_async(const CUDA_MEMCPY2D* c, CUstream) {
  if (g.copy_calls++ == g.fail_copy_call) return CUDA_ERROR_ILLEGAL_ADDRESS;
  const std::uintptr_t src = c->srcMemoryType == CU_MEMORYTYPE_ARRAY ? key_of(c->srcArray) : c->srcDevice;
  const std::uintptr_t dst = c->dstMemoryType == CU_MEMORYTYPE_ARRAY ? key_of(c->dstArray) : c->dstDevice;
  if (!g.content.count(src) || !g.content.count(dst) || c->WidthInBytes != 16 * 4 || c->Height != 8)
    return CUDA_ERROR_INVALID_VALUE;
  g.content[dst] = g.content[src];
  if (g.timing) ++g.copies_in_flight;
  return CUDA_SUCCESS;
}

struct Fake {
  cuda::Api api;
  CUarray shared = reinterpret_cast<CUarray>(0x10);
  CUDA_ARRAY3D_DESCRIPTOR shape{16, 8, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, CUDA_ARRAY3D_COLOR_ATTACHMENT};
  explicit Fake(unsigned repeats) {
    g = State{};
    g_start = nullptr;
    g.content[key_of(shared)] = 42;  // the owner's texels
    api.cuGetErrorName = get_error_name;
    api.cuMemAlloc = mem_alloc;
    api.cuMemFree = mem_free;
    api.cuArray3DCreate = array_create;
    api.cuArrayDestroy = array_destroy;
    api.cuStreamCreate = stream_create;
    api.cuStreamDestroy = stream_destroy;
    api.cuStreamSynchronize = stream_sync;
    api.cuEventCreate = event_create;
    api.cuEventDestroy = event_destroy;
    api.cuEventRecord = event_record;
    api.cuEventSynchronize = event_sync;
    api.cuEventElapsedTime = elapsed;
    api.cuMemcpy2DAsync = memcpy_2d_async;
    measure::enable(repeats);
  }
  ~Fake() { measure::disable(); }
  json run() {
    image::cuda_measure_copies(api, "cudaimage", shared, shape);
    return extmem::probe::to_json(*measure::collected())["legs"]["cudaimage"];
  }
  void expect_all_released() const {
    EXPECT_EQ(g.arrays_live, 0);
    EXPECT_EQ(g.streams_live, 0);
    EXPECT_EQ(g.events_live, 0);
    EXPECT_EQ(g.buffers_live, 0);
  }
};

// The same keys as the Vulkan image rows, on the cuda-event clock, and the shared texels put back.
TEST(CudaImageMeasure, FiguresOnCudaEventsAndTheArrayRestored) {
  Fake f(3);
  json e = f.run();
  EXPECT_FALSE(e.contains("image_error")) << e.dump();
  EXPECT_EQ(e["image_extent"], "16x8");
  EXPECT_EQ(e["image_copy_bytes"], 16u * 8u * 4u);
  EXPECT_EQ(e["image_copies_per_sample"], 5) << "1 ms a copy: 5 make a 5 ms sample";
  for (const char* key : {"image_out_gbps", "image_private_out_gbps", "image_in_gbps", "image_private_in_gbps"}) {
    EXPECT_EQ(e[key]["clock"], "cuda-event") << key;
    EXPECT_EQ(e[key]["n"], 3) << key;
    EXPECT_DOUBLE_EQ(e[key]["median"].get<double>(), 16.0 * 8 * 4 / 1e-3 / 1e9) << key;
  }
  EXPECT_DOUBLE_EQ(e["image_out_ratio"].get<double>(), 1.0);
  EXPECT_EQ(e["gpu_clock"], "cuda-event");
  EXPECT_EQ(e["image_private_array_flags"], CUDA_ARRAY3D_COLOR_ATTACHMENT) << "the imported array's own flags first";
  EXPECT_FALSE(e.contains("image_layout")) << "a CUDA array has no Vulkan layout";
  EXPECT_EQ(g.content[key_of(f.shared)], 42) << "the in-copies overwrote it, the restore put it back";
  f.expect_all_released();
}

// A driver that refuses the imported array's flags for a plain array gets a plain array, and says so.
TEST(CudaImageMeasure, PrivateArrayFlagsFallBackToZero) {
  Fake f(1);
  g.refuse_array_flags = true;
  json e = f.run();
  EXPECT_FALSE(e.contains("image_error")) << e.dump();
  EXPECT_EQ(e["image_private_array_flags"], 0);
  EXPECT_EQ(g.created_flags, 0u);
  f.expect_all_released();
}

// A failing copy in a sample is image_error with the CUresult name verbatim; the texels still go back.
TEST(CudaImageMeasure, AFailingCopyIsImageErrorAndTheArrayIsRestored) {
  Fake f(3);
  g.fail_copy_call = 2 + 5 + 2;  // after save and calibration and the shared-out sample: the private-out sample's third
  json e = f.run();
  EXPECT_EQ(e["image_error"], "image_private_out_gbps: cuMemcpy2DAsync(array -> linear) -> CUDA_ERROR_ILLEGAL_ADDRESS")
      << e.dump();
  EXPECT_FALSE(e.contains("image_out_gbps"));
  EXPECT_EQ(g.content[key_of(f.shared)], 42);
  f.expect_all_released();
}

// A failing save copies nothing into the shared array and measures nothing.
TEST(CudaImageMeasure, AFailingSaveMeasuresNothing) {
  Fake f(3);
  g.fail_copy_call = 0;
  json e = f.run();
  EXPECT_EQ(e["image_error"], "save the shared array: cuMemcpy2DAsync(array -> linear) -> CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_FALSE(e.contains("image_copies_per_sample"));
  EXPECT_EQ(g.copy_calls, 1);
  f.expect_all_released();
}

// No timing events: image_error naming the call and code, no copy at all.
TEST(CudaImageMeasure, NoEventsIsImageError) {
  Fake f(3);
  g.fail_event_create = CUDA_ERROR_OUT_OF_MEMORY;
  json e = f.run();
  EXPECT_EQ(e["image_error"], "timing events: cuEventCreate -> CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(g.copy_calls, 0);
  f.expect_all_released();
}

// A shape this measurement does not copy is refused before any driver call.
TEST(CudaImageMeasure, AnotherShapeIsRefused) {
  Fake f(3);
  f.shape.NumChannels = 2;
  json e = f.run();
  EXPECT_NE(e.value("image_error", std::string()).find("not a 2D UNSIGNED_INT8 x4 array"), std::string::npos)
      << e.dump();
  EXPECT_EQ(g.buffers_live, 0);
  EXPECT_EQ(g.copy_calls, 0);
}

TEST(CudaImageMeasure, NothingWhenNotMeasuring) {
  Fake f(3);
  measure::disable();
  image::cuda_measure_copies(f.api, "cudaimage", f.shared, f.shape);
  EXPECT_EQ(g.copy_calls, 0);
  EXPECT_FALSE(measure::collected().has_value());
}

}  // namespace
