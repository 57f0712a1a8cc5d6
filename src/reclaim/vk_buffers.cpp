// VulkanBuffers: GL-style respecifiable buffers over DeferredReleaseList.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "extmem/reclaim/vulkan.h"
#include "reclaim/vk_painter.h"

namespace extmem::reclaim {

std::uint64_t LifoHandleSource::acquire(std::uint64_t) {
  if (free_.empty()) return next_++;
  const std::uint64_t h = free_.back();
  free_.pop_back();
  return h;
}

void LifoHandleSource::release(std::uint64_t handle) { free_.push_back(handle); }

// Named, not anonymous: VulkanBuffers::Impl (external linkage) holds Stores, and a
// member of internal-linkage type is an ODR hazard GCC reports (-Wsubobject-linkage)
// once this file is part of a unity unit.
namespace vk_buffers_detail {

/// One backing store: the buffer, its size, the frame serial of its last GPU use, its memo handle.
struct Store {
  vk::Buffer buffer;
  std::uint64_t bytes = 0;
  FrameSerial last_use{};
  std::uint64_t handle = 0;
};

}  // namespace vk_buffers_detail

namespace {

using vk_buffers_detail::Store;

constexpr std::uint64_t kMaxStoreBytes = 1ull << 30;

StoreToken token_of(Store* s) { return reinterpret_cast<StoreToken>(s); }
Store* store_of(StoreToken t) { return reinterpret_cast<Store*>(t); }

}  // namespace

struct VulkanBuffers::Impl {
  VulkanOptions options;
  std::shared_ptr<vk::Instance> instance;
  std::unique_ptr<vk::Device> device;
  vkr::Fns fns;
  std::unique_ptr<vkr::QueueTracker> tracker;
  vk::Buffer output;
  std::unique_ptr<vkr::Painter> painter;
  std::unique_ptr<DeferredReleaseList> list;
  std::vector<std::unique_ptr<Store>> current;  // by BufferId; null: no store
  std::vector<vk::Buffer> quarantine;           // see VulkanOptions::quarantine_destroyed
  std::uint64_t frame_serial = 1;
  std::uint64_t uses_since_submit = 0;
  std::string device_name;

  void destroy_store(StoreToken token) {
    std::unique_ptr<Store> s(store_of(token));
    if (options.handles != nullptr) options.handles->release(s->handle);
    if (options.quarantine_destroyed) quarantine.push_back(std::move(s->buffer));
  }

  Status check_buffer(BufferId id, const char* step) const {
    if (id >= current.size())
      return Error{step, ErrorKind::invalid_argument, {},
                   fmt::format("buffer {} does not exist ({} buffers made)", id, current.size())};
    return {};
  }

  Status release_current(BufferId id) {
    if (!current[id]) return {};
    Store* s = current[id].release();
    auto released = list->release(token_of(s), s->last_use, s->bytes);
    if (!released) return std::move(released).error();
    return {};
  }

  ~Impl() {
    if (tracker) {
      // Let every submission retire before anything it references goes away.
      if (Status s = tracker->flush_and_wait(tracker->sync_point()); !s) fns.vkDeviceWaitIdle(device->handle());
    }
    if (list) {
      list->destroy_all();
      for (auto& s : current)
        if (s) list->destroy_unparked(token_of(s.release()), 0);
      list.reset();
    }
    painter.reset();
    quarantine.clear();
    output = vk::Buffer{};
    tracker.reset();
  }
};

VulkanBuffers::VulkanBuffers(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VulkanBuffers::~VulkanBuffers() = default;

Result<std::unique_ptr<VulkanBuffers>> VulkanBuffers::create(const VulkanOptions& options) {
  auto budget = resolve_budget(options.budget_bytes);
  if (!budget) return std::move(budget).error();
  if (options.output_words == 0)
    return Error{"VulkanOptions::output_words", ErrorKind::invalid_argument, {}, "0 words; at least 1 is needed"};
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  auto inst = vk::Instance::create();
  if (!inst) return std::move(inst).error();
  impl->instance = *inst;
  const std::uint32_t index = options.device_index < 0 ? 0 : static_cast<std::uint32_t>(options.device_index);
  auto pds = impl->instance->physical_devices();
  if (!pds) return std::move(pds).error();
  if (index >= pds->size())
    return Error{"VulkanOptions::device_index", ErrorKind::invalid_argument, {},
                 fmt::format("device {} but {} devices", index, pds->size())};
  const auto exts = impl->instance->device_extensions((*pds)[index]);
  const bool has_timeline =
      std::find(exts.begin(), exts.end(), VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME) != exts.end();
  if (options.tracking == SubmitTracking::timeline && !has_timeline)
    return Error{"VulkanOptions::tracking", ErrorKind::unsupported, {},
                 "timeline requested but the device does not expose VK_KHR_timeline_semaphore"};
  const bool timeline = has_timeline && options.tracking != SubmitTracking::fences;
  // The extension is required to support its feature, so enabling both is safe when listed.
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline_feature{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  timeline_feature.timelineSemaphore = VK_TRUE;
  auto device = timeline ? vk::Device::create(impl->instance, index, {VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME},
                                              &timeline_feature)
                         : vk::Device::create(impl->instance, index, {});
  if (!device) return std::move(device).error();
  impl->device = std::move(*device);
  VkPhysicalDeviceProperties props{};
  impl->instance->fn().vkGetPhysicalDeviceProperties(impl->device->physical(), &props);
  impl->device_name = props.deviceName;
  auto fns = vkr::load_fns(*impl->device);
  if (!fns) return std::move(fns).error();
  impl->fns = *fns;
  auto tracker = vkr::QueueTracker::create(*impl->device, impl->fns, timeline);
  if (!tracker) return std::move(tracker).error();
  impl->tracker = std::move(*tracker);

  vk::AllocationRequest req;
  req.size = std::uint64_t{options.output_words} * 4;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto output = impl->device->create_buffer(req);
  if (!output) {
    Error e = std::move(output).error();
    e.step = "create output buffer: " + e.step;
    return e;
  }
  impl->output = std::move(*output);
  std::memset(impl->output.mapped, 0, req.size);
  auto painter = vkr::Painter::create(*impl->device, impl->fns, *impl->tracker, options.memo_keying,
                                      impl->output.buffer, req.size);
  if (!painter) return std::move(painter).error();
  impl->painter = std::move(*painter);
  Impl* raw = impl.get();
  impl->list = std::make_unique<DeferredReleaseList>(
      *impl->tracker, [raw](StoreToken t, std::uint64_t) { raw->destroy_store(t); },
      ListOptions{*budget, options.policy});
  return std::unique_ptr<VulkanBuffers>(new VulkanBuffers(std::move(impl)));
}

BufferId VulkanBuffers::create_buffer() {
  impl_->current.emplace_back();
  return static_cast<BufferId>(impl_->current.size() - 1);
}

Status VulkanBuffers::respecify(BufferId id, std::uint64_t bytes, std::uint32_t fill) {
  Impl& m = *impl_;
  if (Status s = m.check_buffer(id, "respecify"); !s) return s;
  if (bytes < 4 || bytes % 4 != 0 || bytes > kMaxStoreBytes)
    return Error{"respecify", ErrorKind::invalid_argument, {},
                 fmt::format("size {} bytes; accepted: a multiple of 4 from 4 to {}", bytes, kMaxStoreBytes)};
  // Orphan first (glBufferData replaces the contents), so the old store is
  // parked or destroyed before the new one counts as live.
  if (Status s = m.release_current(id); !s) return s;
  vk::AllocationRequest req;
  req.size = bytes;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto made = m.device->create_buffer(req);
  if (!made) {
    Error e = std::move(made).error();
    e.step = "respecify: " + e.step;
    return e;
  }
  auto store = std::make_unique<Store>();
  store->buffer = std::move(*made);
  store->bytes = bytes;
  auto* words = reinterpret_cast<std::uint32_t*>(store->buffer.mapped);
  std::fill(words, words + bytes / 4, fill);
  const auto vk_handle = reinterpret_cast<std::uint64_t>(store->buffer.buffer);
  store->handle = m.options.handles != nullptr ? m.options.handles->acquire(vk_handle) : vk_handle;
  m.list->store_created();
  m.current[id] = std::move(store);
  return {};
}

Status VulkanBuffers::delete_store(BufferId id) {
  Impl& m = *impl_;
  if (Status s = m.check_buffer(id, "delete store"); !s) return s;
  return m.release_current(id);
}

Status VulkanBuffers::paint(BufferId id, std::uint32_t first, std::uint32_t count) {
  Impl& m = *impl_;
  if (Status s = m.check_buffer(id, "paint"); !s) return s;
  Store* s = m.current[id].get();
  if (s == nullptr)
    return Error{"paint", ErrorKind::invalid_argument, {}, fmt::format("buffer {} has no store yet", id)};
  if (count == 0 || first >= m.options.output_words || count > m.options.output_words - first)
    return Error{"paint", ErrorKind::invalid_argument, {},
                 fmt::format("band [{}, {}) is empty or outside the output's {} words", first,
                             std::uint64_t{first} + count, m.options.output_words)};
  Status recorded = m.painter->record(s->buffer.buffer, s->handle, s->bytes, m.list->destroy_epoch(), first, count);
  if (!recorded) return recorded;
  s->last_use = FrameSerial{m.frame_serial};
  if (m.options.submit_every_uses != 0 && ++m.uses_since_submit >= m.options.submit_every_uses) {
    m.uses_since_submit = 0;
    return m.tracker->flush();
  }
  return {};
}

Status VulkanBuffers::flush() { return impl_->tracker->flush(); }

void VulkanBuffers::discard_recording() { impl_->tracker->discard(); }

Status VulkanBuffers::wait_submitted() {
  vkr::QueueTracker& t = *impl_->tracker;
  return t.flush_and_wait(t.last_submitted());
}

Status VulkanBuffers::end_frame() {
  Impl& m = *impl_;
  if (Status s = m.tracker->flush(); !s) return s;
  Status boundary = m.list->end_frame();
  ++m.frame_serial;
  return boundary;
}

Status VulkanBuffers::wait_for_host_access(BufferId id) {
  Impl& m = *impl_;
  if (Status s = m.check_buffer(id, "wait for host access"); !s) return s;
  if (Status s = m.tracker->flush_and_wait(m.tracker->sync_point()); !s) return s;
  if (m.current[id]) m.current[id]->last_use = FrameSerial{0};
  return {};
}

Result<std::vector<std::uint32_t>> VulkanBuffers::read_output() {
  Impl& m = *impl_;
  if (Status s = m.tracker->flush_and_wait(m.tracker->sync_point()); !s) {
    Error e = std::move(s).error();
    e.step = "read output: " + e.step;
    return e;
  }
  const auto* words = reinterpret_cast<const std::uint32_t*>(m.output.mapped);
  return std::vector<std::uint32_t>(words, words + m.options.output_words);
}

std::uint64_t VulkanBuffers::store_handle(BufferId id) const {
  if (id >= impl_->current.size() || !impl_->current[id]) return 0;
  return impl_->current[id]->handle;
}

const Gauges& VulkanBuffers::gauges() const { return impl_->list->gauges(); }

std::uint64_t VulkanBuffers::descriptor_sets_made() const { return impl_->painter->sets_made(); }

SubmitTracking VulkanBuffers::tracking() const {
  return impl_->tracker->uses_timeline() ? SubmitTracking::timeline : SubmitTracking::fences;
}

const char* to_string(SubmitTracking tracking) noexcept {
  switch (tracking) {
    case SubmitTracking::automatic: return "automatic";
    case SubmitTracking::timeline: return "timeline";
    case SubmitTracking::fences: return "fences";
  }
  return "?";
}

std::string VulkanBuffers::device_name() const { return impl_->device_name; }

}  // namespace extmem::reclaim
