#include "probe/routes/cuda/vk_handover.h"

#include <fmt/format.h>

#include "probe/routes/cuda/handover_codec.h"
#include "probe/routes/s1/codec.h"

namespace extmem::probe {

using nlohmann::json;

Result<std::unique_ptr<VkHandover>> VkHandover::create(std::shared_ptr<vk::Device> device, VkBuffer buffer) {
  if (auto missing = vksync::missing_extension(*device))
    return Error{"handover semaphore", ErrorKind::unsupported, {}, *missing};
  const vksync::Advertised adv = vksync::advertised(*device, vksync::kTimelineOpaque);
  if (!adv.exportable())
    return Error{"handover semaphore", ErrorKind::unsupported, {},
                 vksync::not_offered(vksync::kTimelineOpaque, adv, "exportable")};
  std::unique_ptr<VkHandover> h(new VkHandover());
  auto sd = vksync::SyncDevice::create(std::move(device));
  if (!sd) return std::move(sd).error();
  h->sd_ = std::move(*sd);
  h->buffer_ = buffer;
  auto sem = vksync::create_semaphore(*h->sd_, VK_SEMAPHORE_TYPE_TIMELINE, VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT,
                                      "handover timeline, exportable");
  if (!sem) return std::move(sem).error();
  h->sem_ = std::move(*sem);
  return h;
}

VkHandover::~VkHandover() {
  if (pending_) {
    // A wait that never completed still references the semaphore: leaking is defined, destroying is not.
    sem_.leak();
    (void)sd_.release();
  }
}

Result<os::UniqueFd> VkHandover::export_fd() {
  auto fd = vksync::export_fd(*sd_, sem_, vksync::kTimelineOpaque);
  if (!fd) return std::move(fd).error();
  return std::move(fd->fd);
}

Status VkHandover::submit_and_wait(const vksync::Submit& s, const char* what, std::chrono::milliseconds bound) {
  auto fence = vksync::create_fence(*sd_);
  if (!fence) return std::move(fence).error();
  vksync::Submit with = s;
  with.fence = fence->get();
  if (auto st = vksync::submit(*sd_, with, what); !st) return st;
  auto done = vksync::wait_fence(*sd_, *fence, static_cast<std::uint64_t>(bound.count()) * 1'000'000ull, what);
  if (!done) {
    pending_ = true;
    fence->leak();
    return std::move(done).error();
  }
  if (!*done) {
    pending_ = true;
    fence->leak();
    return Error{fmt::format("vkWaitForFences({})", what), ErrorKind::timeout, "VK_TIMEOUT",
                 fmt::format("not complete within {} ms", bound.count())};
  }
  return {};
}

Status VkHandover::signal(std::uint64_t value) {
  const vk::Device& d = sd_->device();
  // Release to the external API: the host writes before this submission are made
  // available (vkQueueSubmit's host write ordering), then the ownership transfer.
  auto cmd = vksync::record(*sd_, [&](VkCommandBuffer c) {
    vksync::barrier(d, c, buffer_, 0, VK_WHOLE_SIZE, VK_ACCESS_HOST_WRITE_BIT, 0, VK_PIPELINE_STAGE_HOST_BIT,
                    VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d.queue_family(), VK_QUEUE_FAMILY_EXTERNAL);
  });
  if (!cmd) return std::move(cmd).error();
  vksync::Submit s{*cmd, VK_NULL_HANDLE, 0, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, sem_.get(), value, VK_NULL_HANDLE};
  return submit_and_wait(s, "handover: release to the importer + signal", std::chrono::milliseconds(5000));
}

Status VkHandover::wait(std::uint64_t value, std::chrono::milliseconds bound) {
  const vk::Device& d = sd_->device();
  // Acquire from the external API after its signal, and make the memory visible to the host.
  auto cmd = vksync::record(*sd_, [&](VkCommandBuffer c) {
    vksync::barrier(d, c, buffer_, 0, VK_WHOLE_SIZE, 0, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT,
                    VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_QUEUE_FAMILY_EXTERNAL,
                    d.queue_family());
  });
  if (!cmd) return std::move(cmd).error();
  vksync::Submit s{*cmd, sem_.get(), value, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_NULL_HANDLE, 0, VK_NULL_HANDLE};
  return submit_and_wait(s, "handover: wait for the importer + acquire", bound);
}

std::optional<Result<json>> handover_op(ChildContext& ctx, std::unique_ptr<VkHandover>& h,
                                        const std::function<Result<std::unique_ptr<VkHandover>>()>& make,
                                        const std::string& op, const json& body, os::UniqueFd& fd_out) {
  if (!handover::is_handover_op(op)) return std::nullopt;
  // A failure is the reply, not the end of serving: the importer records it in its leg.
  auto failed = [](const Error& e) { return Result<json>(s1::body(s1::refusal_of(e))); };
  auto req = handover::decode_request(body.dump());
  if (!req) return failed(req.error());
  if (!h) {
    ctx.step("create the handover timeline semaphore");
    auto made = make();
    if (!made) return failed(made.error());
    h = std::move(*made);
  }
  if (std::holds_alternative<handover::Export>(*req)) {
    ctx.step("vkGetSemaphoreFdKHR(handover timeline, OPAQUE_FD)");
    auto fd = h->export_fd();
    if (!fd) return failed(fd.error());
    fd_out = std::move(*fd);
  } else if (const auto* s = std::get_if<handover::Signal>(&*req)) {
    ctx.step(fmt::format("handover: release + signal {}", s->value));
    if (auto r = h->signal(s->value); !r) return failed(r.error());
  } else {
    const std::uint64_t value = std::get<handover::Wait>(*req).value;
    ctx.step(fmt::format("handover: wait for {} + acquire", value));
    if (auto r = h->wait(value, std::chrono::milliseconds(5000)); !r) return failed(r.error());
  }
  return Result<json>(s1::body(s1::Ok{}));
}

int export_and_serve_with_handover(ChildContext& ctx, const HandleKind& h) {
  return export_and_serve(ctx, h, [&ctx](Exported& ex) {
    // Made on the first handover request; shared by the copies of the ServeSync's function.
    auto handover = std::make_shared<std::unique_ptr<VkHandover>>();
    ServeSync sync;
    sync.extra = [&ctx, &ex, handover](const std::string& op, const json& req, os::UniqueFd& fd_out) {
      return handover_op(ctx, *handover, [&] { return VkHandover::create(ex.device, ex.buffer.buffer); }, op, req,
                         fd_out);
    };
    return sync;
  });
}

}  // namespace extmem::probe
