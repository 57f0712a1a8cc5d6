// Importing an exported Vulkan fd into GLES buffer storage, with the ladder,
// and the GL-side GPU access (docs/probe.md, "T1-gles").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "extmem/core/verdict.h"
#include "gles/egl_context.h"
#include "probe/routes/gles/ladder.h"
#include "probe/layout.h"
#include "probe/worker/whole_alloc.h"

namespace extmem::probe {

/// A GL buffer whose storage is an imported memory object. Deletes the buffer,
/// then the memory object. `map` is the persistent mapping, or null.
/// Counted in drivers::live_gl_buffers() while it exists (the worker's per-route
/// hygiene check).
class GlSharedBuffer {
 public:
  explicit GlSharedBuffer(const gles::EglContext& ctx);
  ~GlSharedBuffer();
  GlSharedBuffer(const GlSharedBuffer&) = delete;
  GlSharedBuffer& operator=(const GlSharedBuffer&) = delete;

  GLuint memory = 0;
  GLuint buffer = 0;
  std::uint64_t size = 0;  ///< buffer bytes
  std::byte* map = nullptr;

 private:
  const gles::EglContext& ctx_;
};

struct GlImportResult {
  LadderResult ladder;
  std::unique_ptr<GlSharedBuffer> shared;  ///< null when every rung was rejected
  /// "storage-refused" (no rung gave the buffer storage), "persistent-map-refused"
  /// (storage accepted, the READ|WRITE|PERSISTENT|COHERENT map was not) or "mapped".
  std::string status;
  std::string map_error;  ///< GL error of the refused map
  /// GL_BUFFER_STORAGE_FLAGS_EXT of the accepted buffer: without MAP_READ/MAP_WRITE/PERSISTENT
  /// a refused map is conformant (Mesa gives memory-object storage flags 0).
  GLint storage_flags = -1;
  /// "fd-consumed=…" of the accepted rung's import, and any failed rung's import that closed its fd.
  std::vector<std::string> fd_notes;
};

/// Walks the ladder importing dups of `fd` (borrowed; never consumed) as
/// GL_HANDLE_TYPE_OPAQUE_FD_EXT, then maps the accepted buffer persistently.
/// Sizes in bytes: `requested` = the Vulkan buffer size, `reqs_size` =
/// VkMemoryRequirements::size (the exporter's allocation size), `fd_size` = the fd's own size.
GlImportResult import_with_ladder(const gles::EglContext& ctx, int fd, std::uint64_t requested,
                                  std::uint64_t reqs_size, std::uint64_t fd_size);

/// One GL GPU round: glCopyBufferSubData of `read_region` out of `shared` into a
/// private buffer, a GPU copy of `write_seed`'s pattern into `write_region`,
/// GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT, a fence and a client wait. Returns the
/// stale 32-bit words of the copy-out against `read_seed`. Errors: driver kind,
/// step = the GL call, code = its GL error (or GL_TIMEOUT_EXPIRED).
Result<std::size_t> gl_gpu_round(const gles::EglContext& ctx, GLuint shared, const Layout& layout, Region read_region,
                                 std::uint64_t read_seed, Region write_region, std::uint64_t write_seed);

/// GL-side GPU access: glCopyBufferSubData of `read_region` out of `shared`
/// into a private buffer and compared (sets gpu.read_ok), then a GPU copy of
/// gpu_seed_of(write_region) into `write_region`, GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT,
/// a fence and a client wait. The other side confirms the write.
void gl_gpu_access(const gles::EglContext& ctx, GLuint shared, const Layout& layout, Region read_region,
                   Region write_region, Leg& gpu);

/// Test-only stand-in for a GL import that shares only part of the allocation
/// (the negative control of gl_whole): words at offsets from `from` on are
/// read and written in `buffer` (a private GL buffer holding a copy of the
/// shared one) instead of the shared buffer.
struct GlPrivateTail {
  GLuint buffer = 0;
  std::size_t from = 0;  ///< bytes from the start of the allocation
};

/// The whole-allocation sweep through GL (docs/probe.md, "The whole
/// allocation"): gpu_sweep with GL buffer copies on `shared` (at least `size`
/// bytes of the shared memory). Gathering is one 8-byte glCopyBufferSubData
/// per stamped page into a private buffer, a fence and a client wait, then a
/// read map of the private buffer; scattering fills the private buffer
/// (glBufferSubData) and copies one word per stamp back, then
/// glMemoryBarrier(CLIENT_MAPPED_BUFFER), a fence and a client wait. `far` is
/// the other view (the exporter's Vulkan mapping, or the peer). Errors are the
/// failing GL call and its GL error. `step` as for gpu_sweep.
void gl_whole(const gles::EglContext& ctx, const std::function<void(const std::string&)>& step, GLuint shared,
              std::size_t size, const whole::Far& far, Leg& gpu, GlPrivateTail tail = {});

}  // namespace extmem::probe
