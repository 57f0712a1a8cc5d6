#include "probe/routes/t4_image/vk_share.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "extmem/os/fd.h"
#include "probe/routes/t4_image/codec.h"
#include "probe/routes/vk/export.h"
#include "probe/worker/peer.h"
#include "probe/worker/route_util.h"
#include "probe/routes/route_file.h"

namespace extmem::probe::image {
namespace {
namespace EXTMEM_ROUTE_FILE {

using nlohmann::json;

std::uint32_t load(std::span<const std::byte> data, std::size_t offset) {
  std::uint32_t v = 0;
  std::memcpy(&v, data.data() + offset, sizeof v);
  return v;
}

Error protocol(std::string what) { return Error{"image peer message", ErrorKind::protocol, {}, std::move(what)}; }

// One request and its typed reply; the fd that came with the reply, if any, goes to `fd`.
template <class Reply>
Result<Reply> request(const ChildContext& ctx, const Request& req, os::UniqueFd* fd = nullptr) {
  if (auto s = ctx.peer().send(os::MsgType::request, encode(req)); !s) return std::move(s).error();
  auto frame = ctx.peer().recv();
  if (!frame) return std::move(frame).error();
  if (frame->type != os::MsgType::reply) return protocol("expected a reply");
  auto r = decode_reply<Reply>(frame->payload);
  if (r && fd != nullptr) *fd = std::move(frame->fd);
  return r;
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

std::uint32_t texel(std::uint64_t seed, std::uint32_t x, std::uint32_t y) {
  // splitmix64 of seed and position: stateless, so any texel can be checked alone.
  std::uint64_t z = seed + ((static_cast<std::uint64_t>(y) << 32 | x) + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<std::uint32_t>(z ^ (z >> 31));
}

std::uint32_t gl_texel(std::uint32_t seed, std::uint32_t x, std::uint32_t y) {
  // Keep in step with kDrawFragment in t4_image/gles.cpp (uint arithmetic wraps mod 2^32 in both).
  std::uint32_t z = seed + (x + 1u) * 0x9e3779b1u + (y + 1u) * 0x85ebca6bu;
  z ^= z >> 16;
  z *= 0x7feb352du;
  z ^= z >> 15;
  z *= 0x846ca68bu;
  z ^= z >> 16;
  return z;
}

Rect round_rect(std::uint32_t width, std::uint32_t height, int round) {
  const std::uint32_t w = std::max(1u, width / 4), h = std::max(1u, height / 4);
  // Round 1 near the top-left, round 2 near the bottom-right: a write that only
  // lands once, or at the wrong place, shows in the other round.
  if (round == 1) return Rect{width / 8, height / 8, w, h};
  return Rect{std::min(width - w, width / 2 + width / 8), std::min(height - h, height / 2 + height / 8), w, h};
}

std::uint64_t owner_seed(int round) { return 0x7434696d6167650ull + static_cast<std::uint64_t>(round); }
std::uint64_t importer_seed(int round) { return 0x696d706f72746572ull + static_cast<std::uint64_t>(round); }

void fill(std::span<std::byte> out, const Rect& r, const Expected& e) {
  std::size_t at = 0;
  for (std::uint32_t y = r.y; y < r.y + r.h; ++y) {
    for (std::uint32_t x = r.x; x < r.x + r.w; ++x) {
      const std::uint32_t v = e.at(x, y);
      std::memcpy(out.data() + at, &v, sizeof v);
      at += kTexelBytes;
    }
  }
}

std::string Compare::text() const {
  if (texels == 0) return "no texels compared";
  if (mismatches == 0) return fmt::format("all {} texels match", texels);
  std::string s = fmt::format("{} of {} texels differ", mismatches, texels);
  if (rect_mismatches > 0) s += fmt::format(" ({} inside the rectangle)", rect_mismatches);
  if (first) s += fmt::format(", first at ({},{}) got 0x{:08x} want 0x{:08x}", first->x, first->y, first->got, first->want);
  if (!shape.empty()) s += "; content " + shape;
  return s;
}

Compare compare(std::span<const std::byte> data, std::size_t row_pitch, std::uint32_t width, std::uint32_t height,
                const Expected& e) {
  Compare c;
  if (width == 0 || height == 0 || data.size() < row_pitch * (height - 1) + std::size_t{width} * kTexelBytes) return c;
  std::size_t transposed = 0, transposable = 0, mirror_x = 0, mirror_y = 0;
  bool constant = true;
  const std::uint32_t first_value = load(data, 0);
  auto got_at = [&](std::uint32_t x, std::uint32_t y) { return load(data, y * row_pitch + std::size_t{x} * kTexelBytes); };
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      const std::uint32_t got = got_at(x, y), want = e.at(x, y);
      ++c.texels;
      constant = constant && got == first_value;
      if (got == want) continue;
      ++c.mismatches;
      if (e.rect && e.rect->contains(x, y)) ++c.rect_mismatches;
      if (!c.first) c.first = Compare::Texel{x, y, got, want};
      // What the wrong texel is instead: the expected texel of another position?
      if (y < width && x < height) {
        ++transposable;
        if (got == e.at(y, x)) ++transposed;
      }
      if (got == e.at(width - 1 - x, y)) ++mirror_x;
      if (got == e.at(x, height - 1 - y)) ++mirror_y;
    }
  }
  if (c.mismatches == 0) return c;
  // A shape is named when it explains nearly every wrong texel (the diagonal or
  // the middle column of a mirror match by construction and are not counted wrong).
  auto explains = [&](std::size_t n, std::size_t of) { return of > 0 && n * 10 >= of * 9; };
  if (constant && c.texels > 1) c.shape = fmt::format("constant 0x{:08x} (never written, cleared or discarded)", first_value);
  else if (explains(transposed, transposable) && transposable * 10 >= c.mismatches * 9) c.shape = "transposed";
  else if (explains(mirror_x, c.mismatches)) c.shape = "mirrored horizontally";
  else if (explains(mirror_y, c.mismatches)) c.shape = "mirrored vertically";
  else if (e.rect && c.rect_mismatches == c.mismatches) c.shape = "wrong only inside the rectangle, the rest intact";
  else if (e.rect && c.rect_mismatches == 0) c.shape = "rectangle right, wrong outside it";
  else c.shape = "unrelated to the pattern";
  return c;
}

Result<ImageGpu> ImageGpu::create(const vk::Device& device, const vk::Image& image) {
  vk::AllocationRequest req;
  req.size = std::size_t{image.shape.width} * image.shape.height * kTexelBytes;
  req.required_flags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  auto staging = device.create_buffer(req);
  if (!staging) return std::move(staging).error();
  ImageGpu g;
  g.device_ = &device;
  g.image_ = &image;
  g.staging_ = std::move(*staging);
  return g;
}

ImageGpu::~ImageGpu() { (void)settle(); }

Status ImageGpu::settle() {
  if (opener_.joinable()) opener_.join();
  if (pending_.get() == VK_NULL_HANDLE) return {};
  auto done = vksync::wait_fence(*sync_.sync, pending_, 5'000'000'000ull, "the late release");
  if (!done || !*done) {
    // Still pending: destroying its fence or command buffer would be undefined.
    pending_.leak();
    pending_cmd_ = VK_NULL_HANDLE;
    if (!done) return std::move(done).error();
    return vk::vk_error("vkWaitForFences(the late release, 5 s)", VK_TIMEOUT);
  }
  sync_.sync->fn().vkFreeCommandBuffers(device_->handle(), sync_.sync->pool(), 1, &pending_cmd_);
  pending_cmd_ = VK_NULL_HANDLE;
  pending_ = vksync::Fence();
  if (opened_ != VK_SUCCESS) return vk::vk_error("vkSignalSemaphoreKHR(late gate)", opened_);
  return {};
}

Status ImageGpu::run(const std::function<void(VkCommandBuffer)>& body, bool acquires, bool releases) {
  if (auto s = settle(); !s) return s;
  // No semaphores: the fence and the socket alone, as every importer but GL's with GL_EXT_semaphore.
  if (sync_.sync == nullptr) return device_->submit_and_wait(body);
  const vksync::SyncDevice& sd = *sync_.sync;
  auto cmd = vksync::record(sd, body);
  if (!cmd) return std::move(cmd).error();
  auto free_cmd = [&] { sd.fn().vkFreeCommandBuffers(device_->handle(), sd.pool(), 1, &*cmd); };
  auto fence = vksync::create_fence(sd);
  if (!fence) {
    free_cmd();
    return std::move(fence).error();
  }
  // The acquire waits on the other API's signal; ALL_COMMANDS, so the acquire
  // barrier's layout transition (source stage TOP_OF_PIPE) is held back too.
  VkSemaphore waits[2] = {};
  VkPipelineStageFlags stages[2] = {};
  std::uint64_t values[2] = {};
  std::uint32_t n = 0;
  if (acquires) {
    waits[n] = sync_.acquired;
    stages[n++] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  }
  const bool gated = releases && sync_.gate != VK_NULL_HANDLE;
  if (gated) {
    waits[n] = sync_.gate;
    values[n] = ++gate_value_;
    stages[n++] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  }
  VkSemaphore signal = sync_.released;
  const std::uint64_t signal_value = 0;
  VkTimelineSemaphoreSubmitInfo tsi{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  tsi.waitSemaphoreValueCount = n;
  tsi.pWaitSemaphoreValues = values;
  tsi.signalSemaphoreValueCount = releases ? 1 : 0;
  tsi.pSignalSemaphoreValues = &signal_value;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = gated ? &tsi : nullptr;  // only the gate is a timeline (values of binary semaphores are ignored)
  si.waitSemaphoreCount = n;
  si.pWaitSemaphores = waits;
  si.pWaitDstStageMask = stages;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &*cmd;
  si.signalSemaphoreCount = releases ? 1 : 0;
  si.pSignalSemaphores = &signal;
  const VkResult r = device_->fn().vkQueueSubmit(device_->queue(), 1, &si, fence->get());
  if (r != VK_SUCCESS) {
    free_cmd();
    return vk::vk_error("vkQueueSubmit(image handover)", r);
  }
  if (gated) {
    // Test fault "late": answer the peer now; the GPU work runs once the host opens the gate.
    pending_ = std::move(*fence);
    pending_cmd_ = *cmd;
    opened_ = VK_SUCCESS;
    opener_ = std::thread([this, value = gate_value_] {
      std::this_thread::sleep_for(std::chrono::milliseconds(kLateMs));
      VkSemaphoreSignalInfo open{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
      open.semaphore = sync_.gate;
      open.value = value;
      opened_ = sync_.sync->fn().vkSignalSemaphoreKHR(device_->handle(), &open);
    });
    return {};
  }
  auto done = vksync::wait_fence(sd, *fence, 10'000'000'000ull, "image handover");
  if (!done || !*done) {
    fence->leak();  // the work is still pending: its fence and command buffer stay
    if (!done) return std::move(done).error();
    return vk::vk_error("vkWaitForFences(image handover, 10 s)", VK_TIMEOUT);
  }
  free_cmd();
  return {};
}

Result<std::span<const std::byte>> ImageGpu::read(VkImageLayout old_layout) {
  const vk::Device& d = *device_;
  const bool acquire = !held_;
  // With the semaphore handover the other API's signal named the layout it left the image in.
  if (sync_.sync != nullptr) old_layout = sync_.acquire_layout;
  auto s = run([&](VkCommandBuffer cb) {
    if (acquire) {
      // The acquire half of the external ownership transfer: its layouts must be the release's.
      vk::record_image_barrier(d, cb, *image_, old_layout, kHandoverLayout, VK_QUEUE_FAMILY_EXTERNAL, d.queue_family(), 0,
                               VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                               VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT);
    } else {
      vk::record_image_barrier(d, cb, *image_, kHandoverLayout, kHandoverLayout, VK_QUEUE_FAMILY_IGNORED,
                               VK_QUEUE_FAMILY_IGNORED, VK_ACCESS_TRANSFER_WRITE_BIT,
                               VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT);
    }
    vk::record_copy_to_buffer(d, cb, *image_, kHandoverLayout, staging_.buffer);
    VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    d.fn().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr,
                                0, nullptr);
  }, acquire, false);
  if (!s) return std::move(s).error();
  held_ = true;
  return std::span<const std::byte>(staging_.mapped, staging_.size);
}

Status ImageGpu::write(const Rect& r, const Expected& e, bool first_use) {
  const vk::Device& d = *device_;
  // A late release may still read the staging buffer: settle before refilling it.
  if (auto st = settle(); !st) return st;
  fill(std::span<std::byte>(staging_.mapped, staging_.size), r, e);
  const bool acquire = !first_use && !held_;
  const VkImageLayout acquire_from = sync_.sync != nullptr ? sync_.acquire_layout : kHandoverLayout;
  auto s = run([&](VkCommandBuffer cb) {
    if (first_use) {
      // A new image's content is undefined anyway: UNDEFINED is the right first layout here.
      vk::record_image_barrier(d, cb, *image_, VK_IMAGE_LAYOUT_UNDEFINED, kHandoverLayout, VK_QUEUE_FAMILY_IGNORED,
                               VK_QUEUE_FAMILY_IGNORED, 0, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                               VK_PIPELINE_STAGE_TRANSFER_BIT);
    } else if (acquire) {
      vk::record_image_barrier(d, cb, *image_, acquire_from, kHandoverLayout, VK_QUEUE_FAMILY_EXTERNAL,
                               d.queue_family(), 0, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                               VK_PIPELINE_STAGE_TRANSFER_BIT);
    } else {
      vk::record_image_barrier(d, cb, *image_, kHandoverLayout, kHandoverLayout, VK_QUEUE_FAMILY_IGNORED,
                               VK_QUEUE_FAMILY_IGNORED, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                               VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                               VK_PIPELINE_STAGE_TRANSFER_BIT);
    }
    vk::record_copy_from_buffer(d, cb, staging_.buffer, *image_, kHandoverLayout, static_cast<std::int32_t>(r.x),
                                static_cast<std::int32_t>(r.y), r.w, r.h);
    // The release half: ownership to VK_QUEUE_FAMILY_EXTERNAL, the layout unchanged.
    vk::record_image_barrier(d, cb, *image_, kHandoverLayout, kHandoverLayout, d.queue_family(), VK_QUEUE_FAMILY_EXTERNAL,
                             VK_ACCESS_TRANSFER_WRITE_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
  }, acquire, true);
  if (!s) return s;
  held_ = false;
  return {};
}

Status ImageGpu::discard_like_undefined() {
  const vk::Device& d = *device_;
  auto s = d.submit_and_wait([&](VkCommandBuffer cb) {
    vk::record_image_barrier(d, cb, *image_, VK_IMAGE_LAYOUT_UNDEFINED, kHandoverLayout, VK_QUEUE_FAMILY_EXTERNAL,
                             d.queue_family(), 0, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                             VK_PIPELINE_STAGE_TRANSFER_BIT);
    VkClearColorValue zero{};
    VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    d.fn().vkCmdClearColorImage(cb, image_->image, kHandoverLayout, &zero, 1, &range);
  });
  if (!s) return s;
  held_ = true;
  return {};
}

Result<vk::ImageShape> shape_from_info(const peer::SetupInfo& info) {
  if (!info.image) return protocol("image create info: the owner's setup has none");
  const peer::ImageCreate& c = *info.image;
  if (c.mip_levels != 1 || c.array_layers != 1 || c.samples != 1 || c.layout != "GENERAL")
    return protocol("the owner's image is not the 1-mip, 1-layer, 1-sample GENERAL-handover image this build imports");
  vk::ImageShape s;
  s.format = static_cast<VkFormat>(c.format);
  s.width = c.width;
  s.height = c.height;
  s.tiling = static_cast<VkImageTiling>(c.tiling);
  s.usage = c.usage;
  s.flags = c.flags;
  return s;
}

Result<Compare> owner_check(const ChildContext& ctx, const Expected& e) {
  return request<Compare>(ctx, CheckRequest{e});
}

Status owner_fill(const ChildContext& ctx, std::uint64_t seed) {
  auto r = request<Ok>(ctx, FillRequest{seed});
  if (!r) return std::move(r).error();
  return {};
}

Result<Compare> check_owned(ExportedImage& ex, const Expected& e) {
  const std::uint32_t w = ex.image->shape.width, h = ex.image->shape.height;
  auto data = ex.gpu->read();
  if (!data) return std::move(data).error();
  return compare(*data, std::size_t{w} * kTexelBytes, w, h, e);
}

Status fill_owned(ExportedImage& ex, std::uint64_t seed) {
  return ex.gpu->write(Rect{0, 0, ex.image->shape.width, ex.image->shape.height}, Expected{seed});
}

Result<HandoverFds> use_semaphores(ChildContext& ctx, ExportedImage& ex, VkImageLayout gl_layout) {
  const char* step = "owner: export the handover semaphores";
  ctx.step(step);
  const bool late = ctx.test_fault(step, "late");
  const vk::Device& d = *ex.device;
  auto unsupported = [&](std::string why) { return Error{step, ErrorKind::unsupported, {}, std::move(why)}; };
  if (!d.has(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME))
    return unsupported(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME " not exposed by the device");
  if (late && !d.has(VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME))
    return unsupported("test fault late: " VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME " not exposed by the device");
  const vksync::SemaphoreKind& kind = vksync::kBinaryOpaque;
  const vksync::Advertised adv = vksync::advertised(d, kind);
  if (!adv.exportable()) return unsupported(vksync::not_offered(kind, adv, "exportable"));
  auto hs = std::make_unique<HandoverSemaphores>();
  auto sd = vksync::SyncDevice::create(ex.device);
  if (!sd) return std::move(sd).error();
  hs->sync = std::move(*sd);
  hs->gl_layout = gl_layout;
  auto released = vksync::create_semaphore(*hs->sync, kind.type, kind.bit, "handover: owner signals");
  if (!released) return std::move(released).error();
  hs->released = std::move(*released);
  auto acquired = vksync::create_semaphore(*hs->sync, kind.type, kind.bit, "handover: GL signals");
  if (!acquired) return std::move(acquired).error();
  hs->acquired = std::move(*acquired);
  if (late) {
    auto gate = vksync::create_semaphore(*hs->sync, VK_SEMAPHORE_TYPE_TIMELINE, 0, "late gate");
    if (!gate) return std::move(gate).error();
    hs->gate = std::move(*gate);
  }
  HandoverFds fds;
  auto rel_fd = vksync::export_fd(*hs->sync, hs->released, kind);
  if (!rel_fd) return std::move(rel_fd).error();
  fds.released = std::move(rel_fd->fd);
  auto acq_fd = vksync::export_fd(*hs->sync, hs->acquired, kind);
  if (!acq_fd) return std::move(acq_fd).error();
  fds.acquired = std::move(acq_fd->fd);
  // The fill was released before this semaphore existed: one signal on the same
  // queue (after that release in submission order) is what GL's first wait takes.
  auto fence = vksync::create_fence(*hs->sync);
  if (!fence) return std::move(fence).error();
  vksync::Submit first;
  first.signal = hs->released.get();
  first.fence = fence->get();
  if (auto s = vksync::submit(*hs->sync, first, "first handover signal"); !s) return std::move(s).error();
  auto done = vksync::wait_fence(*hs->sync, *fence, 10'000'000'000ull, "first handover signal");
  if (!done) return std::move(done).error();
  if (!*done) return vk::vk_error("vkWaitForFences(first handover signal, 10 s)", VK_TIMEOUT);
  ex.gpu->use_sync(HandoverSync{hs->sync.get(), hs->released.get(), hs->acquired.get(), gl_layout, hs->gate.get()});
  ex.semaphores = std::move(hs);
  return fds;
}

Result<HandoverFds> owner_semaphores(const ChildContext& ctx, VkImageLayout gl_layout) {
  HandoverFds fds;
  auto first = request<Ok>(ctx, SemaphoresRequest{static_cast<std::uint32_t>(gl_layout)}, &fds.released);
  if (!first) return std::move(first).error();
  if (!fds.released.valid()) return protocol("the image-semaphores reply carried no fd");
  auto second = request<Ok>(ctx, SemaphoreGlRequest{}, &fds.acquired);
  if (!second) return std::move(second).error();
  if (!fds.acquired.valid()) return protocol("the image-semaphore-gl reply carried no fd");
  return fds;
}

namespace {
namespace EXTMEM_ROUTE_FILE {

// The owner's serve loop: one reply per request, until "done" or the peer goes.
Status serve_image(ChildContext& ctx, ExportedImage& ex) {
  os::UniqueFd gl_signals;  // the second handover fd, sent with the reply to "image-semaphore-gl"
  for (;;) {
    auto frame = ctx.peer().recv();
    if (!frame) return {};  // the driving side closing without "done" ends the route; its report says why
    auto req = decode_request(frame->payload);
    if (req && std::holds_alternative<DoneRequest>(*req)) return {};
    std::string reply;
    os::UniqueFd fd;  // sent with the reply, closed here after it
    if (!req) {
      reply = encode(Refusal{req.error().message()});
    } else if (const auto* sr = std::get_if<SemaphoresRequest>(&*req)) {
      auto fds = use_semaphores(ctx, ex, static_cast<VkImageLayout>(sr->gl_layout));
      if (fds) {
        fd = std::move(fds->released);
        gl_signals = std::move(fds->acquired);
        reply = encode(Ok{});
      } else {
        reply = encode(refusal_of(fds.error()));
      }
    } else if (std::holds_alternative<SemaphoreGlRequest>(*req)) {
      fd = std::move(gl_signals);
      reply = fd.valid() ? encode(Ok{}) : encode(Refusal{"no handover semaphores exported"});
    } else if (const auto* cr = std::get_if<CheckRequest>(&*req)) {
      ctx.step("owner: acquire the image from VK_QUEUE_FAMILY_EXTERNAL, copy it out, compare every texel");
      auto c = check_owned(ex, cr->expected);
      reply = c ? encode(*c) : encode(Refusal{why_of(c.error())});
    } else {
      ctx.step("owner: refill the image on the GPU and release it to VK_QUEUE_FAMILY_EXTERNAL");
      auto st = fill_owned(ex, std::get<FillRequest>(*req).seed);
      reply = st ? encode(Ok{}) : encode(Refusal{why_of(st.error())});
    }
    if (auto s = ctx.peer().send(os::MsgType::reply, reply, fd.get()); !s) return s;
  }
}

// The owner's failure as the row's facts: "server: <what><step -> code>" with its kind.
RouteFacts server_fatal(const std::string& what, const Error& e) {
  return RouteFacts{.fatal = "server: " + what + why_of(e), .stop_kind = e.kind};
}

// Capability first: creating an external image of a combination the driver
// does not report is invalid usage (Vulkan spec, VkImageCreateInfo), so an
// unreported one, one not exportable, or one beyond maxExtent is UNSUPPORTED
// without trying. Returns the row's facts when the image cannot be made.
std::optional<RouteFacts> check_export_support(ChildContext& ctx, const vk::Device& d, const vk::ImageShape& shape,
                                               vk::ExternalImageSupport& support) {
  const std::string what = fmt::format("R8G8B8A8_UNORM {} usage=0x{:x}", vk::tiling_name(shape.tiling), shape.usage);
  ctx.step("vkGetPhysicalDeviceImageFormatProperties2(OPAQUE_FD export)");
  support = vk::external_image_support(d.instance(), d.physical(), shape, VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT);
  RouteFacts facts;
  if (support.result != VK_SUCCESS) {
    facts.unsupported = fmt::format("server: vkGetPhysicalDeviceImageFormatProperties2({}, OPAQUE_FD) -> {}", what,
                                    vk::result_name(support.result));
  } else if (!support.exportable()) {
    facts.unsupported = fmt::format("server: {} OPAQUE_FD images are not exportable (externalMemoryFeatures=0x{:x})", what,
                                    support.external.externalMemoryFeatures);
  } else if (shape.width > support.limits.maxExtent.width || shape.height > support.limits.maxExtent.height) {
    facts.unsupported = fmt::format("server: {}x{} exceeds maxExtent {}x{} of {} OPAQUE_FD images", shape.width,
                                    shape.height, support.limits.maxExtent.width, support.limits.maxExtent.height, what);
  } else {
    return std::nullopt;
  }
  return facts;
}

// The image and its exportable memory, its GPU helper, and the owner's first
// fill, released to VK_QUEUE_FAMILY_EXTERNAL. A LINEAR image goes to
// host-visible memory where the image allows it, so the importer can also read
// it by CPU; an OPTIMAL one to device-local memory, where render targets live
// (NVIDIA 580 lists a host-heap type without flags first, and the first allowed
// type put the image behind PCIe: docs/results/nvidia-h200-580.md).
std::optional<RouteFacts> create_and_fill(ChildContext& ctx, ExportedImage& ex, vk::ImageRequest& req,
                                          const vk::ExternalImageSupport& support) {
  const vk::Device& d = *ex.device;
  ctx.step("vkAllocateMemory(export OPAQUE_FD image)");
  req.external_handle_types = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  req.export_memory = true;
  req.dedicated = support.dedicated_only() ? 1 : -1;
  req.preferred_flags = req.shape.tiling == VK_IMAGE_TILING_LINEAR ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
                                                                   : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  vk::AllocationFailure af;
  auto img = vk::create_image(d, req, &af);
  if (!img) {
    if (!af.at_allocate) return server_fatal("", af.error);
    SiteFailure s = classify_site(af.error, support.exportable(), "OPAQUE_FD image export");
    RouteFacts facts;
    stop_row(facts, s.kind(), "server: " + s.why);
    return facts;
  }
  ex.image = std::make_unique<vk::Image>(std::move(*img));
  auto gpu = ImageGpu::create(d, *ex.image);
  if (!gpu) return server_fatal("staging buffer: ", gpu.error());
  ex.gpu = std::make_unique<ImageGpu>(std::move(*gpu));
  ctx.step("fill the image on the GPU with the owner's pattern and release it to VK_QUEUE_FAMILY_EXTERNAL");
  if (auto s = ex.gpu->write(Rect{0, 0, req.shape.width, req.shape.height}, Expected{owner_seed(1)}, true); !s)
    return server_fatal("", s.error());
  return std::nullopt;
}

// vkGetMemoryFdKHR and the fd's sanity (open; where it has a size, at least
// the allocation's). Test-only (EXTMEM_TEST_FAULT ...:server:vkGetMemoryFdKHR:decoy):
// export a second image of the same create info that was never filled, so the
// importer gets the right size and the wrong content and must FAIL.
std::optional<RouteFacts> export_fd(ChildContext& ctx, ExportedImage& ex, const vk::ImageRequest& req,
                                    const vk::ExternalImageSupport& support, std::uint64_t& fd_size) {
  const vk::Device& d = *ex.device;
  ctx.step("vkGetMemoryFdKHR(OPAQUE_FD image)");
  if (ctx.test_fault("vkGetMemoryFdKHR(OPAQUE_FD image)", "decoy")) {
    vk::AllocationFailure af;
    auto other = vk::create_image(d, req, &af);
    if (!other) return server_fatal("decoy image: ", af.error);
    ex.decoy = std::make_unique<vk::Image>(std::move(*other));
  }
  VkMemoryGetFdInfoKHR gi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
  gi.memory = ex.decoy ? ex.decoy->memory : ex.image->memory;
  gi.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  int raw_fd = -1;
  RouteFacts facts;
  if (VkResult r = d.fn().vkGetMemoryFdKHR(d.handle(), &gi, &raw_fd); r != VK_SUCCESS) {
    SiteFailure s = classify_site(vk::vk_error("vkGetMemoryFdKHR", r), support.exportable(), "OPAQUE_FD image export");
    stop_row(facts, s.kind(), "server: " + s.why);
    return facts;
  }
  ex.fd.reset(raw_fd);
  ctx.step("post-export fd sanity");
  if (!os::fd_is_open(raw_fd)) {
    facts.fatal = "server: exported fd fails sanity: fcntl(F_GETFD) fails: " + errno_code(errno);
    ex.fd.release();
    return facts;
  }
  fd_size = 0;  // 0: the fd has no size (NVIDIA's opaque fd is not seekable), which is no fault
  if (auto size = os::fd_size(raw_fd)) {
    if (*size < ex.image->allocation_size) {
      facts.fatal = fmt::format("server: exported fd fails sanity: fd size {} < allocation size {}", *size,
                                ex.image->allocation_size);
      return facts;
    }
    fd_size = *size;
  }
  return std::nullopt;
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

std::variant<ExportedImage, RouteFacts> export_image(ChildContext& ctx, VkImageTiling tiling) {
  ExportedImage ex;
  auto dev = open_device(ctx, export_extensions(kOpaqueFd));
  if (!dev) {
    RouteFacts facts;
    stop_row(facts, dev.error().kind, "server: " + why_of(dev.error()));
    return facts;
  }
  ex.device = std::move(*dev);
  const vk::Device& d = *ex.device;
  if (auto missing = missing_extension(d, kOpaqueFd)) return RouteFacts{.unsupported = *missing};
  vk::ImageRequest req;
  req.shape.width = ctx.params().image_width;
  req.shape.height = ctx.params().image_height;
  req.shape.tiling = tiling;
  vk::ExternalImageSupport support;
  if (auto facts = check_export_support(ctx, d, req.shape, support)) return *facts;
  if (auto facts = create_and_fill(ctx, ex, req, support)) return *facts;
  std::uint64_t fd_size = 0;
  if (auto facts = export_fd(ctx, ex, req, support, fd_size)) return *facts;
  // The full create info: an importer must repeat all of it (Vulkan spec,
  // "External Memory Handle Types": the same creation parameters), plus the
  // allocation it must match and the layout of the handover.
  const vk::Image& im = *ex.image;
  const vk::ImageShape& shape = req.shape;
  ex.info.image = peer::ImageCreate{static_cast<std::uint32_t>(shape.format), "R8G8B8A8_UNORM", shape.width, shape.height,
                                    static_cast<std::uint32_t>(shape.tiling), vk::tiling_name(shape.tiling), shape.usage,
                                    shape.flags, 1, 1, 1, "GENERAL", im.dedicated_required, im.dedicated_preferred};
  ex.info.allocation_size = im.allocation_size;
  ex.info.memory_type_index = im.memory_type_index;
  ex.info.dedicated = im.dedicated;
  ex.info.fd_size = fd_size;
  ex.info.fd_target = os::fd_target(ex.fd.get());
  ex.info.device_uuid = d.device_uuid();
  ex.info.exportable_advertised = support.exportable();
  return ex;
}

int owner_serve(ChildContext& ctx, VkImageTiling tiling) {
  auto result = export_image(ctx, tiling);
  if (auto* facts = std::get_if<RouteFacts>(&result)) {
    (void)send_setup_failure(ctx, *facts);
    return 0;
  }
  ExportedImage& ex = std::get<ExportedImage>(result);
  ctx.step("send the fd and the image's create info");
  if (!send_setup(ctx, ex.info, ex.fd.get())) return 1;
  ex.fd.reset();  // the importer holds its own copy now
  ctx.step("serve the importer's image checks");
  return serve_image(ctx, ex) ? 0 : 1;
}

}  // namespace extmem::probe::image
