// The whole-allocation check (docs/probe.md, "The whole allocation") beside a
// plain copy of the same bytes, for every HOST_VISIBLE memory type of the first
// Vulkan device: what the every-page guarantee costs against the floor of
// moving those bytes at all, per memory type and per side (CPU, GPU).
//
//   BM_SweepCpu/mtN    whole::sweep over the type's CPU mapping, both directions,
//                      two rounds each (the far side is the same mapping: the
//                      memory traffic of one side's part of the check)
//   BM_CopyCpu/mtN     memcpy of the whole mapping into private memory
//   BM_SweepGpuShader/mtN  the GPU form: two gathers and two scatters of one word
//                      per page, one dispatch each (SweepShader)
//   BM_SweepGpuRegions/mtN the same with one VkBufferCopy region per page (the
//                      form before the shader)
//   BM_CopyGpu/mtN     one vkCmdCopyBuffer of the whole buffer into device-local memory
//
// EXTMEM_SWEEP_BENCH_MIB sets the size (default 64; the GPU machine's runs use 1024).
//   ./build/bench/whole_sweep_bench --benchmark_min_time=1x --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "probe/worker/sweep_shader.h"
#include "probe/worker/whole_alloc.h"
#include "vulkan/context.h"

namespace {

using extmem::probe::SweepShader;
namespace vk = extmem::vk;
namespace whole = extmem::probe::whole;

std::size_t bench_bytes() {
  const char* v = std::getenv("EXTMEM_SWEEP_BENCH_MIB");
  return (v != nullptr ? std::strtoull(v, nullptr, 10) : 64) << 20;
}

struct Bench {
  std::unique_ptr<vk::Device> device;
  std::size_t bytes = 0;
};

Bench& bench() {
  static Bench b;
  return b;
}

// The shared-side buffer in memory type `type`, mapped.
extmem::Result<vk::Buffer> shared_in(std::uint32_t type) {
  vk::AllocationRequest req;
  req.size = bench().bytes;
  req.memory_type_index = static_cast<int>(type);
  auto b = bench().device->create_buffer(req);
  // Every page touched once before timing: first-touch faults are the allocation's cost, not the check's.
  if (b && b->mapped != nullptr) std::memset(b->mapped, 0, bench().bytes);
  return b;
}

extmem::Result<vk::Buffer> plain(VkDeviceSize bytes, VkMemoryPropertyFlags flags, bool map) {
  vk::AllocationRequest req;
  req.size = bytes;
  req.required_flags = flags;
  req.map = map;
  return bench().device->create_buffer(req);
}

void count_bytes(benchmark::State& state, std::size_t bytes) {
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["stamps"] = static_cast<double>(whole::plan_for(bytes).count);
}

void sweep_cpu(benchmark::State& state, std::uint32_t type) {
  auto buf = shared_in(type);
  if (!buf) return state.SkipWithError(buf.error().message().c_str());
  std::span<std::byte> view(buf->mapped, bench().bytes);
  const whole::Plan plan = whole::plan_for(view.size());
  whole::LocalFar far(view, plan);
  for (auto _ : state) {
    auto swept = whole::sweep(view, plan, far.as_far(), 0x62656e6368ull);
    if (!swept || swept->unaliased_at) return state.SkipWithError("the sweep did not pass over one mapping");
  }
  count_bytes(state, view.size());
}

void copy_cpu(benchmark::State& state, std::uint32_t type) {
  auto buf = shared_in(type);
  if (!buf) return state.SkipWithError(buf.error().message().c_str());
  std::vector<std::byte> to(bench().bytes);
  for (auto _ : state) {
    std::memcpy(to.data(), buf->mapped, to.size());
    benchmark::DoNotOptimize(to.data());
  }
  count_bytes(state, to.size());
}

// Two gathers and two scatters of every stamp's word, as gpu_sweep does.
void sweep_gpu(benchmark::State& state, std::uint32_t type, bool shader) {
  const vk::Device& d = *bench().device;
  auto buf = shared_in(type);
  if (!buf) return state.SkipWithError(buf.error().message().c_str());
  const whole::Plan plan = whole::plan_for(bench().bytes);
  const std::size_t n = plan.count;
  const VkDeviceSize index_offset = (n * 8 + 255) / 256 * 256;
  auto priv = plain(index_offset + n * 4, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, true);
  if (!priv) return state.SkipWithError(priv.error().message().c_str());
  auto* index = reinterpret_cast<std::uint32_t*>(priv->mapped + index_offset);
  std::vector<VkBufferCopy> gather(n), scatter(n);
  for (std::size_t i = 0; i < n; ++i) {
    index[i] = static_cast<std::uint32_t>(plan.offset(i) / 8);
    gather[i] = {plan.offset(i), i * 8, 8};
    scatter[i] = {i * 8, plan.offset(i), 8};
  }
  std::unique_ptr<SweepShader> s;
  if (shader) {
    auto made = SweepShader::create(d, {buf->buffer, plan.size, priv->buffer, 0, index_offset, static_cast<std::uint32_t>(n)});
    if (!made) return state.SkipWithError(made.error().message().c_str());
    s = std::move(*made);
  }
  auto pass = [&](bool scatter_pass) {
    return d.submit_and_wait([&](VkCommandBuffer cmd) {
      if (s) return s->record(cmd, scatter_pass);
      d.fn().vkCmdCopyBuffer(cmd, scatter_pass ? priv->buffer : buf->buffer, scatter_pass ? buf->buffer : priv->buffer,
                             static_cast<std::uint32_t>(n), scatter_pass ? scatter.data() : gather.data());
    });
  };
  for (auto _ : state) {
    for (bool scatter_pass : {false, false, true, true})
      if (auto st = pass(scatter_pass); !st) return state.SkipWithError(st.error().message().c_str());
  }
  count_bytes(state, bench().bytes);
}

void copy_gpu(benchmark::State& state, std::uint32_t type) {
  const vk::Device& d = *bench().device;
  auto buf = shared_in(type);
  if (!buf) return state.SkipWithError(buf.error().message().c_str());
  auto local = plain(bench().bytes, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, false);
  if (!local) return state.SkipWithError(local.error().message().c_str());
  const VkBufferCopy all{0, 0, bench().bytes};
  for (auto _ : state) {
    auto st = d.submit_and_wait([&](VkCommandBuffer cmd) { d.fn().vkCmdCopyBuffer(cmd, buf->buffer, local->buffer, 1, &all); });
    if (!st) return state.SkipWithError(st.error().message().c_str());
  }
  count_bytes(state, bench().bytes);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  auto instance = vk::Instance::create();
  if (!instance) {
    fmt::print(stderr, "whole_sweep_bench: no Vulkan instance: {}\n", instance.error().message());
    return 1;
  }
  auto device = vk::Device::create(*instance, 0, {});
  if (!device) {
    fmt::print(stderr, "whole_sweep_bench: no Vulkan device 0: {}\n", device.error().message());
    return 1;
  }
  bench().device = std::move(*device);
  bench().bytes = bench_bytes();
  const VkPhysicalDeviceMemoryProperties& mem = bench().device->memory_properties();
  for (std::uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
    const VkMemoryPropertyFlags f = mem.memoryTypes[t].propertyFlags;
    if ((f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) == 0) continue;
    const std::string suffix = fmt::format("mt{}_{}MiB{}{}", t, bench().bytes >> 20,
                                           (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) ? "_local" : "",
                                           (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? "_cached" : "");
    auto reg = [&](const char* name, auto fn) {
      benchmark::RegisterBenchmark(fmt::format("{}/{}", name, suffix).c_str(), fn)->Unit(benchmark::kMillisecond)->UseRealTime();
    };
    reg("BM_SweepCpu", [t](benchmark::State& s) { sweep_cpu(s, t); });
    reg("BM_CopyCpu", [t](benchmark::State& s) { copy_cpu(s, t); });
    reg("BM_SweepGpuShader", [t](benchmark::State& s) { sweep_gpu(s, t, true); });
    reg("BM_SweepGpuRegions", [t](benchmark::State& s) { sweep_gpu(s, t, false); });
    reg("BM_CopyGpu", [t](benchmark::State& s) { copy_gpu(s, t); });
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
