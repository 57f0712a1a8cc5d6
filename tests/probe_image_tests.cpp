// The T4 image rows (src/probe/routes/t4_image/opaque_fd.cpp, t4_image/vk_share.h):
// the texel compare and its naming of wrong shapes (unit), the rows' answers on
// lavapipe, their negative controls through EXTMEM_TEST_FAULT, --image-size
// refusals, and phase A's image facts (integration, the real binary).
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "probe/phase_a_codec.h"
#include "probe/routes/t4_image/vk_share.h"
#include "support/run_shell.h"

namespace {

using extmem::probe::image::compare;
using extmem::probe::image::Expected;
using extmem::probe::image::gl_texel;
using extmem::probe::image::Rect;
using extmem::probe::image::texel;
using extmem::test::run_extmem;

std::vector<std::byte> image_of(std::uint32_t w, std::uint32_t h, const Expected& e) {
  std::vector<std::byte> out(std::size_t{w} * h * 4);
  extmem::probe::image::fill(out, Rect{0, 0, w, h}, e);
  return out;
}

void put(std::vector<std::byte>& img, std::uint32_t w, std::uint32_t x, std::uint32_t y, std::uint32_t v) {
  std::memcpy(img.data() + (std::size_t{y} * w + x) * 4, &v, 4);
}

// The RESULT line of exactly `row` (not of a longer row name starting with it).
std::string result_line(const std::string& out, const std::string& row) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("RESULT " + row + " ", 0) == 0) return line;
  return {};
}

std::string status_of(const std::string& out, const std::string& row) {
  std::istringstream in(result_line(out, row));
  std::string tag, name, status;
  in >> tag >> name >> status;
  return status;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- the compare (unit) ----

// The pattern is not symmetric: a texel and its transposed, mirrored neighbours differ.
TEST(ImageCompare, PatternIsAsymmetric) {
  for (std::uint32_t y = 0; y < 16; ++y)
    for (std::uint32_t x = 0; x < 16; ++x) {
      if (x != y) EXPECT_NE(texel(1, x, y), texel(1, y, x)) << x << "," << y;
      if (x != 15 - x) EXPECT_NE(texel(1, x, y), texel(1, 15 - x, y)) << x << "," << y;
    }
}

// An exact copy matches every texel.
TEST(ImageCompare, ExactCopyMatches) {
  const Expected e{7};
  auto img = image_of(32, 24, e);
  auto c = compare(img, 32 * 4, 32, 24, e);
  EXPECT_TRUE(c.ok()) << c.text();
  EXPECT_EQ(c.texels, 32u * 24u);
}

// One wrong texel is counted and named as the first mismatch.
TEST(ImageCompare, OneWrongTexelIsFirstAndOnly) {
  const Expected e{7};
  auto img = image_of(32, 24, e);
  put(img, 32, 5, 3, 0x12345678);
  auto c = compare(img, 32 * 4, 32, 24, e);
  EXPECT_EQ(c.mismatches, 1u);
  ASSERT_TRUE(c.first);
  EXPECT_EQ(c.first->x, 5u);
  EXPECT_EQ(c.first->y, 3u);
  EXPECT_EQ(c.first->got, 0x12345678u);
  EXPECT_TRUE(has(c.text(), "first at (5,3) got 0x12345678")) << c.text();
}

// A transposed read is detected and named.
TEST(ImageCompare, TransposedIsNamed) {
  const Expected e{9};
  std::vector<std::byte> img(32 * 32 * 4);
  for (std::uint32_t y = 0; y < 32; ++y)
    for (std::uint32_t x = 0; x < 32; ++x) put(img, 32, x, y, e.at(y, x));
  auto c = compare(img, 32 * 4, 32, 32, e);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.shape, "transposed") << c.text();
}

// A horizontally mirrored read is detected and named.
TEST(ImageCompare, MirroredIsNamed) {
  const Expected e{9};
  std::vector<std::byte> img(40 * 20 * 4);
  for (std::uint32_t y = 0; y < 20; ++y)
    for (std::uint32_t x = 0; x < 40; ++x) put(img, 40, x, y, e.at(39 - x, y));
  auto c = compare(img, 40 * 4, 40, 20, e);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.shape, "mirrored horizontally") << c.text();
}

// A never-written (all zero) image is named constant.
TEST(ImageCompare, ZeroImageIsConstant) {
  std::vector<std::byte> img(16 * 16 * 4);
  auto c = compare(img, 16 * 4, 16, 16, Expected{3});
  EXPECT_EQ(c.mismatches, 256u);
  EXPECT_TRUE(has(c.shape, "constant 0x00000000")) << c.text();
}

// Rows are read at the given pitch, not assumed tightly packed.
TEST(ImageCompare, RowPitchIsHonoured) {
  const Expected e{5};
  const std::uint32_t w = 10, h = 4, pitch = 64;
  std::vector<std::byte> img(pitch * h, std::byte{0xee});
  for (std::uint32_t y = 0; y < h; ++y)
    for (std::uint32_t x = 0; x < w; ++x) {
      std::uint32_t v = e.at(x, y);
      std::memcpy(img.data() + y * pitch + x * 4, &v, 4);
    }
  EXPECT_TRUE(compare(img, pitch, w, h, e).ok());
  EXPECT_FALSE(compare(img, w * 4, w, h, e).ok()) << "a tight-pitch reading of padded rows must not match";
}

// A rectangle that did not land is told apart from a wrong rest.
// The GL draw's pattern is not symmetric either, and differs per seed.
TEST(ImageCompare, GlPatternIsAsymmetric) {
  for (std::uint32_t y = 0; y < 16; ++y)
    for (std::uint32_t x = 0; x < 16; ++x) {
      if (x != y) EXPECT_NE(gl_texel(1, x, y), gl_texel(1, y, x)) << x << "," << y;
      EXPECT_NE(gl_texel(1, x, y), gl_texel(2, x, y)) << x << "," << y;
    }
}

// An expected GL rectangle holds gl_texel of its seed inside, the base pattern outside.
TEST(ImageCompare, GlRectangleUsesGlPattern) {
  Expected e{5, Rect{4, 4, 8, 8}};
  e.rect_gl_seed = 9;
  EXPECT_EQ(e.at(4, 4), gl_texel(9, 4, 4));
  EXPECT_EQ(e.at(11, 11), gl_texel(9, 11, 11));
  EXPECT_EQ(e.at(12, 4), texel(5, 12, 4));
  auto img = image_of(16, 16, e);
  EXPECT_TRUE(compare(img, 16 * 4, 16, 16, e).ok());
  EXPECT_FALSE(compare(img, 16 * 4, 16, 16, Expected{5}).ok());
}

TEST(ImageCompare, MissingRectangleIsLocated) {
  const Expected base{5};
  const Expected with_rect{5, Rect{4, 4, 8, 8}, 6};
  auto img = image_of(32, 32, base);
  auto c = compare(img, 32 * 4, 32, 32, with_rect);
  EXPECT_EQ(c.mismatches, 64u);
  EXPECT_EQ(c.rect_mismatches, 64u);
  EXPECT_EQ(c.shape, "wrong only inside the rectangle, the rest intact") << c.text();
}

// Phase A's image facts survive its JSON form, which the worker sends the parent.
TEST(ImagePhaseA, WireKeepsImageFacts) {
  extmem::vk::VulkanEnumeration e;
  extmem::vk::DeviceInfo d;
  d.max_image_dimension_2d = 32768;
  extmem::vk::ExternalImageInfo x;
  x.handle_type = "OPAQUE_FD";
  x.tiling = "LINEAR";
  x.result = "VK_SUCCESS";
  x.exportable = x.importable = true;
  x.max_width = 32768;
  d.external_images = {x};
  extmem::vk::DrmModifierInfo m;
  m.modifier = 0xe08000000000000full;
  m.plane_count = 1;
  m.dma_buf_result = "VK_ERROR_FORMAT_NOT_SUPPORTED";
  m.dma_buf_result_code = -11;
  d.drm_modifiers = {m};
  e.devices = {d};
  extmem::probe::PhaseA a;
  a.vulkan = e;
  auto back = extmem::probe::phase_a_from_json(extmem::probe::phase_a_json(a), "phase A");
  ASSERT_TRUE(back) << back.error().message();
  const auto& b = back->vulkan.devices.at(0);
  EXPECT_EQ(b.max_image_dimension_2d, 32768u);
  ASSERT_EQ(b.external_images.size(), 1u);
  EXPECT_EQ(b.external_images[0].tiling, "LINEAR");
  EXPECT_TRUE(b.external_images[0].importable);
  ASSERT_EQ(b.drm_modifiers.size(), 1u);
  EXPECT_EQ(b.drm_modifiers[0].modifier, 0xe08000000000000full);
  EXPECT_EQ(b.drm_modifiers[0].dma_buf_result, "VK_ERROR_FORMAT_NOT_SUPPORTED");
  EXPECT_EQ(b.drm_modifiers[0].dma_buf_result_code, -11);  // what code branches on crosses too
}

// ---- the rows on lavapipe (integration) ----

// Both image rows round-trip on lavapipe: every texel both ways, two rounds; the
// LINEAR twin's CPU read at the reported row pitch matches too.
TEST(ImageRows, LavapipeAnswers) {
  auto r = run_extmem("probe --only-t4");
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string opt = result_line(r.out, "T4-image-opaque-fd");
  const std::string lin = result_line(r.out, "T4-image-opaque-fd@linear");
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd"), "OK") << opt;
  EXPECT_TRUE(has(opt, "vkimage[D]=rt")) << opt;
  EXPECT_TRUE(has(opt, "image=256x256 R8G8B8A8_UNORM OPTIMAL")) << opt;
  EXPECT_TRUE(has(opt, "fd-consumed=yes")) << opt;
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd@linear"), "OK") << lin;
  EXPECT_TRUE(has(lin, "vkimage[D]=rt cpumap[i]=read-only")) << lin;
  EXPECT_TRUE(has(lin, "cpumap offset=0 rowPitch=1024: all 65536 texels match")) << lin;
}

// Fresh processes per route give the same answers as the warm workers.
TEST(ImageRows, IsolatedRouteAgrees) {
  auto r = run_extmem("probe --only-t4 --isolate=route");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd"), "OK") << r.out;
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd@linear"), "OK") << r.out;
}

// A non-square size that is not a multiple of 8 still round-trips (rectangles and pitches follow it).
TEST(ImageRows, OddSizeRoundTrips) {
  auto r = run_extmem("probe --only=T4-image-opaque-fd,T4-image-opaque-fd@linear --image-size=37x5");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd"), "OK") << result_line(r.out, "T4-image-opaque-fd");
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd@linear"), "OK") << result_line(r.out, "T4-image-opaque-fd@linear");
  EXPECT_TRUE(has(result_line(r.out, "T4-image-opaque-fd"), "image=37x5")) << r.out;
}

// Negative control: the importer gets a different exportable image of the right
// size that was never filled; it must FAIL, in both directions, naming the content.
TEST(ImageRows, DifferentImageFails) {
  auto r = run_extmem("probe --only=T4-image-opaque-fd",
                      "EXTMEM_TEST_FAULT=T4-image-opaque-fd:server:vkGetMemoryFdKHR:decoy");
  const std::string line = result_line(r.out, "T4-image-opaque-fd");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd"), "FAIL") << line;
  EXPECT_TRUE(has(line, "round 1 importer read: 65536 of 65536 texels differ")) << line;
  EXPECT_TRUE(has(line, "round 1 owner read:")) << line;
}

// Negative control: a transposed read of the pattern is detected and named.
TEST(ImageRows, TransposedReadIsDetected) {
  auto r = run_extmem("probe --only=T4-image-opaque-fd",
                      "EXTMEM_TEST_FAULT=T4-image-opaque-fd:client:compare:transpose");
  const std::string line = result_line(r.out, "T4-image-opaque-fd");
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd"), "FAIL") << line;
  EXPECT_TRUE(has(line, "content transposed")) << line;
}

// Negative control: a mirrored read of the pattern is detected and named.
TEST(ImageRows, MirroredReadIsDetected) {
  auto r = run_extmem("probe --only=T4-image-opaque-fd",
                      "EXTMEM_TEST_FAULT=T4-image-opaque-fd:client:compare:mirror");
  const std::string line = result_line(r.out, "T4-image-opaque-fd");
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd"), "FAIL") << line;
  EXPECT_TRUE(has(line, "content mirrored horizontally")) << line;
}

// Negative control: an importer whose first transition from UNDEFINED discards
// the content (constructed: acquire from UNDEFINED, then the clear such a driver
// leaves) is FAIL and the row says that transition did it.
TEST(ImageRows, DiscardingUndefinedTransitionIsReported) {
  auto r = run_extmem("probe --only=T4-image-opaque-fd",
                      "EXTMEM_TEST_FAULT=T4-image-opaque-fd:client:round\\ 1:\\ acquire:discard");
  const std::string line = result_line(r.out, "T4-image-opaque-fd");
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd"), "FAIL") << line;
  EXPECT_TRUE(has(line, "first transition from VK_IMAGE_LAYOUT_UNDEFINED discarded the owner's content")) << line;
  EXPECT_TRUE(has(line, "content constant 0x00000000")) << line;
}

// The same acquire from UNDEFINED without the clear: lavapipe keeps the content
// (measured), and the row reports the transition and that it survived.
TEST(ImageRows, UndefinedTransitionOnLavapipeKeepsContent) {
  auto r = run_extmem("probe --only=T4-image-opaque-fd",
                      "EXTMEM_TEST_FAULT=T4-image-opaque-fd:client:round\\ 1:\\ acquire:undefined");
  const std::string line = result_line(r.out, "T4-image-opaque-fd");
  EXPECT_EQ(status_of(r.out, "T4-image-opaque-fd"), "OK") << line;
  EXPECT_TRUE(has(line, "first acquire from VK_IMAGE_LAYOUT_UNDEFINED: the content survived here")) << line;
}

// ---- --image-size ----

// Text that is not WxH, a zero side, and a side beyond the limits are usage
// errors (exit 2) that say what is accepted.
TEST(ImageRows, BadImageSizeIsUsageError) {
  for (const char* bad : {"abc", "256", "256x", "x256", "-1x4", "0x256", "256x0", "70000x16", "256X256"}) {
    auto r = run_extmem(std::string("probe --only-t4 --image-size=") + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "--image-size")) << bad << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "each side from 1 to")) << bad << "\n" << r.out;
  }
}

// A side beyond the device's maxImageDimension2D (16384 on lavapipe) is refused with that number.
TEST(ImageRows, ImageSizeBeyondDeviceLimitIsUsageError) {
  auto r = run_extmem("probe --only-t4 --image-size=16385x16");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "each side from 1 to 16384 (maxImageDimension2D of device")) << r.out;
}

// ---- phase A ----

// Phase A prints the image format facts per handle type and tiling, the DRM
// modifier state and whether a render node exists (lavapipe: measured values).
TEST(ImageRows, PhaseAPrintsImageFacts) {
  auto r = run_extmem("probe --only-t4");
  EXPECT_TRUE(has(r.out, "maxImageDimension2D=16384")) << r.out;
  EXPECT_TRUE(has(r.out, "external image R8G8B8A8_UNORM OPTIMAL OPAQUE_FD: export=yes import=yes dedicated-only=no"))
      << r.out;
  EXPECT_TRUE(has(r.out, "external image R8G8B8A8_UNORM LINEAR OPAQUE_FD: export=yes import=yes")) << r.out;
  EXPECT_TRUE(has(r.out, "external image R8G8B8A8_UNORM OPTIMAL DMA_BUF: ")) << r.out;
  EXPECT_TRUE(has(r.out, "DRM format modifiers: n/a (VK_EXT_image_drm_format_modifier not exposed)")) << r.out;
  EXPECT_TRUE(has(r.out, "DRM render nodes: ")) << r.out;
}

// ---- the GL image rows ----

// The rows' decisive write is a scissored draw, checked texel by texel by the
// owner; after the rounds a scissored glClear on a fresh fill is checked the
// same way, an informational finding (glclear-after-fence=...). Measured on
// Mesa 22.3 (docs/results/lavapipe-mesa-22.3-images.md).

// The default GL on lavapipe is zink (--gl-driver=auto): it imports the fd on
// the first rung, and the owner sees its draw after glFenceSync +
// glClientWaitSync, both rounds, same process and across. Its scissored glClear
// is not in the image after that fence (measured: not even after glFinish and a
// GL read, once draws came before it): the finding says so and the rows stay
// OK, the verdict being the draw's.
TEST(GlesImageRows, ZinkDrawIsCoveredByTheFence) {
  auto r = run_extmem("probe --only=T4-gles-image-same-proc,T4-gles-image-cross-proc");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "GL_RENDERER=zink")) << r.out;
  for (const char* row : {"T4-gles-image-same-proc", "T4-gles-image-cross-proc"}) {
    const std::string line = result_line(r.out, row);
    EXPECT_EQ(status_of(r.out, row), "OK") << line;
    EXPECT_TRUE(has(line, "glimage[D]=rt")) << line;
    EXPECT_TRUE(has(line, "renderer=\"zink")) << line;
    EXPECT_TRUE(has(line, "uuid=match")) << line;
    EXPECT_TRUE(has(line, "glimport fd-consumed=yes")) << line;
    // Zink on lavapipe has no GL_EXT_semaphore: the fence path, with the reason.
    EXPECT_TRUE(has(line, "sync=glFenceSync/glClientWaitSync and the socket (GL_EXT_semaphore absent: "
                          "GL_EXT_semaphore and GL_EXT_semaphore_fd not exposed by the GLES context"))
        << line;
    EXPECT_TRUE(has(line, "write=scissored draw")) << line;
    EXPECT_TRUE(has(line, "glclear-after-fence=")) << line;
    EXPECT_FALSE(has(line, "glclear-after-fence=seen")) << line;
    EXPECT_FALSE(has(line, "glclear-after-fence=not measured")) << line;
  }
}

// llvmpipe (--gl-driver=llvmpipe) round-trips the same way, and its scissored
// glClear is covered by the fence too.
TEST(GlesImageRows, LlvmpipeDrawAndClearAreCoveredByTheFence) {
  auto r = run_extmem("probe --gl-driver=llvmpipe --only=T4-gles-image-same-proc,T4-gles-image-cross-proc");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* row : {"T4-gles-image-same-proc", "T4-gles-image-cross-proc"}) {
    const std::string line = result_line(r.out, row);
    EXPECT_EQ(status_of(r.out, row), "OK") << line;
    EXPECT_TRUE(has(line, "glimage[D]=rt")) << line;
    EXPECT_TRUE(has(line, "renderer=\"llvmpipe")) << line;
    EXPECT_TRUE(has(line, "accepted=dedicated=off import=allocation(262144)")) << line;
    EXPECT_TRUE(has(line, "glclear-after-fence=seen")) << line;
  }
}

// The semaphore handover really is waited on: with the test fault "late" the
// owner answers each refill before its GPU has run it (the work waits 300 ms on
// a gate the host opens), so a GL that does not wait in glWaitSemaphoreEXT
// reads the previous round's content and the row FAILs. Where GL has no
// GL_EXT_semaphore (zink and llvmpipe on lavapipe) the rows keep the fence
// path, the fault's step is never reached, and the test says so and skips.
TEST(GlesImageRows, SemaphoreWaitHoldsGlBehindALateRelease) {
  for (const char* row : {"T4-gles-image-same-proc", "T4-gles-image-cross-proc"}) {
    auto r = run_extmem(std::string("probe --only=") + row,
                        std::string("EXTMEM_TEST_FAULT=") + row + ":server:handover\\ semaphores:late");
    const std::string line = result_line(r.out, row);
    EXPECT_EQ(status_of(r.out, row), "OK") << line;
    if (has(line, "sync=glFenceSync")) {
      EXPECT_TRUE(has(line, "GL_EXT_semaphore absent: ")) << line;
      EXPECT_FALSE(has(line, "glwait+read-ms=")) << line;
      GTEST_SKIP() << row << ": no GL_EXT_semaphore handover on this driver: " << line;
    }
    EXPECT_TRUE(has(line, "sync=GL_EXT_semaphore layouts")) << line;
    EXPECT_TRUE(has(line, "glclear-after-signal=")) << line;
    // Round 2's wait is the one the gate held back.
    const auto at = line.find("glwait+read-ms=");
    ASSERT_NE(at, std::string::npos) << line;
    const std::string ms = line.substr(at + 15, line.find_first_of(";\n", at) - at - 15);
    const auto slash = ms.find('/');
    ASSERT_NE(slash, std::string::npos) << line;
    EXPECT_GE(std::stoi(ms.substr(slash + 1)), 250) << line;
  }
}

// ---- the dma-buf modifier row ----

// The row names exactly the extensions phase A lists absent (lavapipe of Mesa 22.3:
// both; of Mesa 25: it has VK_EXT_external_memory_dma_buf), and with the modifier
// extension present, what the DMA_BUF query said per modifier. The export itself is
// not built (see the route file): never OK, and SKIP only naming usable modifiers.
TEST(ImageRows, DmaBufModifierNamesWhatIsMissing) {
  auto r = run_extmem("probe --only=T4-image-dma-buf-modifier");
  const std::string line = result_line(r.out, "T4-image-dma-buf-modifier");
  EXPECT_EQ(r.code, 0) << r.out;
  std::string missing;
  for (const char* e : {"VK_EXT_image_drm_format_modifier", "VK_EXT_external_memory_dma_buf", "VK_KHR_external_memory_fd"})
    if (!has(r.out, std::string(" ") + e + "=yes")) missing += (missing.empty() ? "" : ", ") + std::string(e);
  const bool modifiers = has(r.out, " VK_EXT_image_drm_format_modifier=yes");
  const std::string status = status_of(r.out, "T4-image-dma-buf-modifier");
  if (status == "SKIP") {
    EXPECT_TRUE(missing.empty() && modifiers) << line;
    EXPECT_TRUE(has(line, "DMA_BUF-capable modifiers here: 0x")) << line;
    return;
  }
  EXPECT_EQ(status, "UNSUPPORTED") << line;
  if (!missing.empty()) EXPECT_TRUE(has(line, "why: " + missing + " not exposed by the device")) << line;
  if (modifiers) EXPECT_TRUE(has(line, "no modifier listed for R8G8B8A8_UNORM is DMA_BUF exportable and importable")) << line;
}

}  // namespace
