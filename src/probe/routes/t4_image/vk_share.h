// What the T4 image rows share (docs/probe.md, "T4 image rows"): the seeded
// texel pattern, the rectangle each importer writes per round, the texel-by-
// texel compare that names how a wrong image is wrong, and the allocating half
// (a Vulkan image exported as OPAQUE_FD, filled on the GPU, handed over through
// VK_QUEUE_FAMILY_EXTERNAL, serving the importer's checks and refills).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <variant>

#include <nlohmann/json.hpp>

#include "extmem/core/verdict.h"
#include "extmem/os/fd.h"

#include "probe/routes/vk/sync.h"
#include "probe/worker/child_context.h"
#include "probe/worker/setup_info.h"
#include "probe/routes.h"
#include "vulkan/image.h"

namespace extmem::probe::image {

/// Bytes of one texel: every image row's format is R8G8B8A8_UNORM (CUDA's
/// UNSIGNED_INT8 x 4).
inline constexpr std::size_t kTexelBytes = 4;

/// The texel at (x, y) of the pattern of `seed`: a 32-bit hash of seed and
/// position, so no two positions are related and a transposed, mirrored or
/// shifted read does not match by accident (R8G8B8A8 bytes = the value's
/// little-endian bytes).
std::uint32_t texel(std::uint64_t seed, std::uint32_t x, std::uint32_t y);

/// The texel a GLES 3 fragment shader computes at (x, y) for `seed` (it has
/// 32-bit integers only, so not texel()'s 64-bit hash): x and y mixed in with
/// different multipliers (a transposed write does not match) and a 32-bit
/// avalanche. t4_image/gles.cpp's fragment shader is the same arithmetic.
std::uint32_t gl_texel(std::uint32_t seed, std::uint32_t x, std::uint32_t y);

/// A rectangle of texels: x, y from the top-left texel, w x h texels.
struct Rect {
  std::uint32_t x = 0, y = 0, w = 0, h = 0;
  bool contains(std::uint32_t px, std::uint32_t py) const { return px >= x && px < x + w && py >= y && py < y + h; }
};

/// The importer's rectangle in round 1 or 2 of a width x height image: a quarter
/// of each side (at least one texel), at a different place each round.
Rect round_rect(std::uint32_t width, std::uint32_t height, int round);

/// The seed the owner fills the whole image with before round `round`, and the
/// seed the importer writes its rectangle with in that round.
std::uint64_t owner_seed(int round);
std::uint64_t importer_seed(int round);

/// What the image should hold: `base_seed`'s pattern everywhere, and inside
/// `rect` when set one of: the one texel value `rect_constant` (a writer that
/// only clears: GL's scissored glClear), gl_texel(`rect_gl_seed`) (GL's draw),
/// or else texel(`rect_seed`) (a Vulkan writer). At most one of the two optionals is set.
struct Expected {
  std::uint64_t base_seed = 0;
  std::optional<Rect> rect;
  std::uint64_t rect_seed = 0;
  std::optional<std::uint32_t> rect_constant;
  std::optional<std::uint32_t> rect_gl_seed;
  std::uint32_t at(std::uint32_t x, std::uint32_t y) const {
    if (rect && rect->contains(x, y)) {
      if (rect_constant) return *rect_constant;
      if (rect_gl_seed) return gl_texel(*rect_gl_seed, x, y);
      return texel(rect_seed, x, y);
    }
    return texel(base_seed, x, y);
  }
};

/// Writes the texels of `e` for `r` into `out`, rows tightly packed (r.w texels a row).
void fill(std::span<std::byte> out, const Rect& r, const Expected& e);

/// The outcome of comparing a read-back image with what it should hold.
struct Compare {
  std::size_t texels = 0;           ///< compared
  std::size_t mismatches = 0;       ///< texels that differ
  std::size_t rect_mismatches = 0;  ///< of those, inside the expected rectangle
  struct Texel {
    std::uint32_t x = 0, y = 0, got = 0, want = 0;
  };
  std::optional<Texel> first;       ///< the first differing texel in row order
  /// How the content is wrong when it is: "transposed", "mirrored horizontally",
  /// "mirrored vertically", "constant 0x........" (every texel the same: never
  /// written, cleared or discarded) or "unrelated"; empty when nothing differs.
  std::string shape;

  bool ok() const { return texels > 0 && mismatches == 0; }
  /// "N of M texels differ (K inside the rectangle), first at (x,y) got 0x.. want 0x..; content <shape>", or "all M texels match".
  std::string text() const;
};

/// Compares `data` (rows `row_pitch` bytes apart, width x height texels) with `e`.
Compare compare(std::span<const std::byte> data, std::size_t row_pitch, std::uint32_t width, std::uint32_t height,
                const Expected& e);


/// Where an image is kept between owners: every release and acquire uses
/// oldLayout = newLayout = GENERAL (no transition at the handover, so nothing
/// may discard the content), the layout both sides agree on in the setup. The
/// GL_EXT_semaphore handover is the one exception: the owner's acquires come
/// from the layout GL's signal names (HandoverSync::acquire_layout).
inline constexpr VkImageLayout kHandoverLayout = VK_IMAGE_LAYOUT_GENERAL;

/// The semaphores a handover goes through on the GL image rows where GL has
/// GL_EXT_semaphore (docs/probe.md, "T4 image rows"); all borrowed, owned by
/// HandoverSemaphores.
struct HandoverSync {
  const vksync::SyncDevice* sync = nullptr;
  VkSemaphore released = VK_NULL_HANDLE;  ///< binary; signalled by every release to VK_QUEUE_FAMILY_EXTERNAL
  VkSemaphore acquired = VK_NULL_HANDLE;  ///< binary; the other API signals it, every acquire waits on it
  VkImageLayout acquire_layout = kHandoverLayout;  ///< the layout the other API's signal leaves the image in
  /// Test fault "late" only: a timeline semaphore every release's GPU work also
  /// waits on, opened from the host kLateMs after the submit returned.
  VkSemaphore gate = VK_NULL_HANDLE;
};

/// How long the test fault "late" holds a release's GPU work back, milliseconds.
inline constexpr int kLateMs = 300;

/// The owner's test-only faults (EXTMEM_TEST_FAULT): a decoy image's memory
/// exported instead, and (GL_EXT_semaphore handover) every release's GPU work held kLateMs.
inline constexpr FaultDef kDecoyFault{"decoy", Role::server, "vkGetMemoryFdKHR",
                                      "the memory of a never-filled image of the same create info is exported: the "
                                      "row must FAIL, no texel of the owner's fill seen"};
inline constexpr FaultDef kLateFault{"late", Role::server, "owner: export the handover semaphores",
                                     "every release's GPU work waits 300 ms on a host-opened gate after the owner "
                                     "answered: the semaphore wait must cover it and the row stay OK"};

/// One side's GPU work on a shared image: a host-visible staging buffer of
/// width x height texels and the ownership state. Every operation records one
/// command buffer, submits it and waits on a fence; the other process is told
/// only after that, so the fence and the socket order the two GPUs' work. With
/// use_sync() the releases also signal and the acquires also wait on the
/// external semaphores (the GL_EXT_semaphore handover); without it (every
/// Vulkan and CUDA importer) nothing changes.
class ImageGpu {
 public:
  /// Creates the staging buffer on `device`. Errors: create_buffer's.
  static Result<ImageGpu> create(const vk::Device& device, const vk::Image& image);
  ImageGpu(ImageGpu&&) = default;
  ImageGpu& operator=(ImageGpu&&) = delete;
  ImageGpu(const ImageGpu&) = delete;
  ImageGpu& operator=(const ImageGpu&) = delete;
  /// Waits (bounded, 5 s) for work the test fault "late" left pending.
  ~ImageGpu();

  /// From now on every release signals `s.released`, every acquire waits on
  /// `s.acquired` and transitions from `s.acquire_layout`; with `s.gate` set a
  /// release is not waited for: its GPU work waits on the gate, a host thread
  /// opens it kLateMs later, and the next operation waits for that work first.
  /// The semaphores must outlive this object's work.
  void use_sync(const HandoverSync& s) { sync_ = s; }

  /// Acquires the image from VK_QUEUE_FAMILY_EXTERNAL (from `old_layout` to
  /// GENERAL; an importer's first acquire normally from GENERAL, the layout of
  /// the release) unless this side holds it, then copies all of it into the
  /// staging buffer and makes that visible to the host. Returns the texels,
  /// tightly packed rows. Errors: the failing Vulkan call.
  Result<std::span<const std::byte>> read(VkImageLayout old_layout = kHandoverLayout);

  /// Writes `r` with the texels of `e` on the GPU (staging buffer -> image;
  /// acquiring first when this side does not hold the image), then releases
  /// the image to VK_QUEUE_FAMILY_EXTERNAL in GENERAL. `first_use` (the
  /// owner's first fill) transitions from UNDEFINED instead of acquiring.
  Status write(const Rect& r, const Expected& e, bool first_use = false);

  /// Test-only, the deliberate discard: acquires (from UNDEFINED) and clears
  /// the image on the GPU the way a driver that drops content at a transition
  /// from UNDEFINED leaves it. Errors: the failing Vulkan call.
  Status discard_like_undefined();

 private:
  ImageGpu() = default;
  // Records `body`, submits it (with the handover semaphores when use_sync()
  // was called and this submit acquires / releases) and waits for it, except a
  // gated release, which settle() waits for later.
  Status run(const std::function<void(VkCommandBuffer)>& body, bool acquires, bool releases);
  // Waits for a gated release's work (test fault "late"). Errors: vkWaitForFences's.
  Status settle();
  const vk::Device* device_ = nullptr;
  const vk::Image* image_ = nullptr;
  vk::Buffer staging_;
  bool held_ = false;  ///< this side's queue family owns the image now
  HandoverSync sync_;
  // A gated release in flight: its fence, command buffer and the thread that opens the gate.
  vksync::Fence pending_;
  VkCommandBuffer pending_cmd_ = VK_NULL_HANDLE;
  std::thread opener_;
  std::uint64_t gate_value_ = 0;  ///< the gate's last value asked for (a timeline counter, only grows)
  VkResult opened_ = VK_SUCCESS;  ///< the opener thread's vkSignalSemaphoreKHR result, read after join
};

/// The owner's side of the GL_EXT_semaphore handover: two exportable binary
/// OPAQUE_FD semaphores on the owner's device and, for the test fault "late",
/// the timeline gate. Destroyed after the image's GPU helper has settled
/// (ExportedImage's member order).
struct HandoverSemaphores {
  std::unique_ptr<vksync::SyncDevice> sync;
  vksync::Semaphore released;  ///< the owner signals; exported, GL waits on it (glWaitSemaphoreEXT)
  vksync::Semaphore acquired;  ///< exported, GL signals it (glSignalSemaphoreEXT); the owner waits on it
  vksync::Semaphore gate;      ///< test fault "late" only
  VkImageLayout gl_layout = kHandoverLayout;  ///< the layout GL's signal leaves the image in
};

/// A live image export: the device, the image, its GPU helper and the fd (owned
/// here until sent), with the create info an importer must repeat. Members are
/// released in reverse order: fd, GPU helper, images, device.
struct ExportedImage {
  std::shared_ptr<vk::Device> device;
  std::unique_ptr<vk::Image> image;
  std::unique_ptr<vk::Image> decoy;  ///< test fault "decoy": the never-filled image whose memory was exported instead
  std::unique_ptr<HandoverSemaphores> semaphores;  ///< set by use_semaphores(); outlives `gpu`
  std::unique_ptr<ImageGpu> gpu;
  os::UniqueFd fd;
  peer::SetupInfo info;  ///< the image's create info, its allocation, the fd's size and target
};

/// The owner's part before any peer: checks the image format properties for
/// OPAQUE_FD export (not reported, not exportable, or --image-size beyond
/// maxExtent: UNSUPPORTED with the driver's answer), creates the image
/// (`tiling`) and its exportable memory (a decline: FAIL, the driver reported
/// it exportable), fills it on the GPU with owner_seed(1), releases it to
/// VK_QUEUE_FAMILY_EXTERNAL, exports the memory (vkGetMemoryFdKHR) and checks
/// the fd. Returns the export or the row's facts ("server: ..." texts).
std::variant<ExportedImage, RouteFacts> export_image(ChildContext& ctx, VkImageTiling tiling);

/// The owner's own check and refill (what the peer's requests run; a
/// same-process route calls them directly). Errors: the failing Vulkan call.
Result<Compare> check_owned(ExportedImage& ex, const Expected& e);
Status fill_owned(ExportedImage& ex, std::uint64_t seed);

/// The allocating half of the cross-process image rows: export_image, send the
/// fd and the create info, then serve "image-check" (check_owned) and
/// "image-fill" (fill_owned) until "done". Returns 0 (failures travel to the
/// peer as a failed setup or an error reply).
int owner_serve(ChildContext& ctx, VkImageTiling tiling);

/// The two semaphore fds of the GL_EXT_semaphore handover, owned by the holder
/// until GL imports them (a successful glImportSemaphoreFdEXT owns the fd).
struct HandoverFds {
  os::UniqueFd released;  ///< GL waits on it before it touches the image
  os::UniqueFd acquired;  ///< GL signals it after its work on the image
};

/// The owner switches `ex` to semaphore handovers (what the peer's
/// "image-semaphores" request runs; same-proc calls it directly), as step
/// "owner: export the handover semaphores" of `ctx`: checks
/// VK_KHR_external_semaphore_fd and that binary OPAQUE_FD semaphores are
/// exportable (else unsupported with the driver's features), creates the two
/// semaphores, exports an fd of each, makes later acquires transition from
/// `gl_layout` (the layout GL's glSignalSemaphoreEXT names), and signals
/// `released` once on the queue: the image was released after its fill, before
/// any semaphore existed, and GL's first wait needs a signal. Test fault
/// "late" at that step: every later release's GPU work waits kLateMs on a
/// host-opened gate after the owner has answered (needs VK_KHR_timeline_semaphore).
/// The fds are the caller's to send or import.
/// Errors: unsupported (extension, not exportable); vk_error of the failing call.
Result<HandoverFds> use_semaphores(ChildContext& ctx, ExportedImage& ex, VkImageLayout gl_layout);

/// The importer's side of the same over the socket: asks the owner to switch
/// and receives the two fds. Errors: the channel's; protocol when an fd is
/// missing; the owner's failure with its step and code (unsupported stays
/// unsupported).
Result<HandoverFds> owner_semaphores(const ChildContext& ctx, VkImageLayout gl_layout);

/// The shape the importer must repeat, from the setup's info: format, extent,
/// tiling, usage, flags. Errors: protocol when the info has no image or one
/// that is not what this build creates (1 mip, 1 layer, 1 sample, GENERAL handover).
Result<vk::ImageShape> shape_from_info(const peer::SetupInfo& info);

/// Asks the owner to acquire, read back and compare with `e`. Errors: the channel's, protocol.
Result<Compare> owner_check(const ChildContext& ctx, const Expected& e);
/// Asks the owner to refill the whole image with `seed` and release it. Errors: the channel's, protocol.
Status owner_fill(const ChildContext& ctx, std::uint64_t seed);

}  // namespace extmem::probe::image
