#include "probe/routes/t4_image/gl_measure.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include <fmt/format.h>

#include "probe/routes/gles/gpu_clock.h"
#include "probe/routes/t4_image/measure.h"
#include "probe/worker/measure.h"
#include "probe/routes/route_file.h"

namespace extmem::probe::image {
namespace {
namespace EXTMEM_ROUTE_FILE {

// Bytes the coverage sample copies: 64 MiB, several ms on a CPU driver, a fraction of a ms on a GPU.
constexpr std::size_t kCoverageBytes = std::size_t{64} << 20;

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

void measure_gl_copies(const gles::EglContext& ctx, const std::string& leg, GLuint shared, std::uint32_t w,
                       std::uint32_t h) {
  if (!measure::enabled()) return;
  const std::size_t bytes = std::size_t{w} * h * 4;  // GL_RGBA8: 4 bytes a texel
  if (bytes == 0 || shared == 0) return;
  const gles::GlFns& gl = ctx.gl();
  LegFigures& m = *measure::leg(leg);
  log_extent(leg, w, h);
  if (gl.glCopyImageSubData == nullptr) {
    m.image.error = fmt::format(
        "glCopyImageSubData: not in {} and neither GL_EXT_copy_image nor GL_OES_copy_image offered", ctx.gl_version);
    return;
  }
  if (gl.glGenTextures == nullptr || gl.glTexStorage2D == nullptr || gl.glBindTexture == nullptr ||
      gl.glDeleteTextures == nullptr) {
    m.image.error = "private textures: glGenTextures/glBindTexture/glTexStorage2D/glDeleteTextures not resolved";
    return;
  }
  m.image.copy = gl.copy_image_name;
  (void)ctx.take_error();

  // The keeper of the shared texels, the partner every timed copy goes to or comes from, and the
  // private texture of the baseline: GL's own storage of the shared texture's format and size.
  enum : std::size_t { keeper, partner, priv, kTextures };
  std::array<GLuint, kTextures> tex{};
  gl.glGenTextures(static_cast<GLsizei>(tex.size()), tex.data());
  for (GLuint t : tex) {
    gl.glBindTexture(GL_TEXTURE_2D, t);
    gl.glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, static_cast<GLsizei>(w), static_cast<GLsizei>(h));
  }
  gl.glBindTexture(GL_TEXTURE_2D, 0);
  auto cleanup = [&] {
    gl.glDeleteTextures(static_cast<GLsizei>(tex.size()), tex.data());
    (void)ctx.take_error();
  };
  if (const GLenum e = ctx.take_error(); e != GL_NO_ERROR) {
    m.image.error = fmt::format("private textures: glTexStorage2D(GL_RGBA8, {}x{}) -> {}", w, h, gles::gl_error_name(e));
    return cleanup();
  }

  const measure::GlGpuClock clock(ctx);  // its fallback, from the start or from a sample, is logged after sampling
  // `copies` whole-level copies from `src` to `dst` in one sample; GL orders them.
  auto copy = [&](GLuint src, GLuint dst, unsigned copies) {
    return clock.time(gl.copy_image_name, [&] {
      for (unsigned c = 0; c < copies; ++c)
        gl.glCopyImageSubData(src, GL_TEXTURE_2D, 0, 0, 0, 0, dst, GL_TEXTURE_2D, 0, 0, 0, 0, static_cast<GLsizei>(w),
                              static_cast<GLsizei>(h), 1);
    });
  };

  if (auto saved = copy(shared, tex[keeper], 1); !saved) {
    m.image.error = "save the shared texture: " + measure::step_and_code(saved.error());
    return cleanup();
  }
  // Untimed samples of about kCoverageBytes each (at least one copy, at most a sample's most), as
  // many as the clock's coverage check needs in a row: long enough on most drivers, so a query that
  // misses the copies turns the clock to the wall before the calibration rather than after it.
  const auto coverage_copies = static_cast<unsigned>(
      std::clamp<std::size_t>(kCoverageBytes / bytes, 1, measure::kMaxCopiesPerSample));
  for (int i = 0; i < measure::GlGpuClock::kUncoveredToFallBack; ++i) {
    if (auto probe = copy(tex[priv], tex[partner], coverage_copies); !probe) {
      m.image.error = "coverage sample: " + measure::step_and_code(probe.error());
      (void)copy(tex[keeper], shared, 1);
      return cleanup();
    }
  }
  (void)sample_copies(leg, bytes, [&](ImageCopy k, unsigned copies) {
    switch (k) {
      case ImageCopy::shared_out: return copy(shared, tex[partner], copies);
      case ImageCopy::private_out: return copy(tex[priv], tex[partner], copies);
      case ImageCopy::shared_in: return copy(tex[partner], shared, copies);
      case ImageCopy::private_in: break;
    }
    return copy(tex[partner], tex[priv], copies);
  });
  if (!clock.fallback().empty()) m.gpu_clock_fallback = clock.fallback();
  // Put the shared texels back (the in-copies overwrote them), whatever happened above.
  if (auto restored = copy(tex[keeper], shared, 1); !restored)
    m.image.error = "restore the shared texture: " + measure::step_and_code(restored.error());
  cleanup();
}

}  // namespace extmem::probe::image
