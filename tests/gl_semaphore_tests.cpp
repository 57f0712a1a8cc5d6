// src/probe/routes/gles/semaphore.h: the GL_LAYOUT_*_EXT value the T4 GL image
// rows pass for a VkImageLayout, and the names their details print.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "probe/routes/gles/semaphore.h"

namespace {

using extmem::probe::glsem::gl_layout_name;
using extmem::probe::glsem::gl_layout_of;

// The two layouts the image rows hand over in map to GL_EXT_semaphore's values.
TEST(GlSemaphoreLayout, HandoverLayoutsMap) {
  EXPECT_EQ(gl_layout_of(VK_IMAGE_LAYOUT_GENERAL), GLenum{GL_LAYOUT_GENERAL_EXT});
  EXPECT_EQ(gl_layout_of(VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL), GLenum{GL_LAYOUT_COLOR_ATTACHMENT_EXT});
}

// Every layout the extension has a value for maps to a distinct one.
TEST(GlSemaphoreLayout, EveryPairIsDistinct) {
  const VkImageLayout all[] = {VK_IMAGE_LAYOUT_GENERAL,
                               VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                               VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
                               VK_IMAGE_LAYOUT_DEPTH_STENCIL_READ_ONLY_OPTIMAL,
                               VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                               VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                               VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                               VK_IMAGE_LAYOUT_DEPTH_READ_ONLY_STENCIL_ATTACHMENT_OPTIMAL,
                               VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_STENCIL_READ_ONLY_OPTIMAL};
  std::vector<GLenum> seen;
  for (VkImageLayout l : all) {
    auto g = gl_layout_of(l);
    ASSERT_TRUE(g.has_value()) << l;
    EXPECT_EQ(std::count(seen.begin(), seen.end(), *g), 0) << l;
    EXPECT_EQ(gl_layout_name(*g).rfind("GL_LAYOUT_", 0), 0u) << l;
    seen.push_back(*g);
  }
}

// A layout GL_EXT_semaphore has no value for is refused, not guessed.
TEST(GlSemaphoreLayout, UnmappedLayoutIsNullopt) {
  EXPECT_FALSE(gl_layout_of(VK_IMAGE_LAYOUT_UNDEFINED).has_value());
  EXPECT_FALSE(gl_layout_of(VK_IMAGE_LAYOUT_PREINITIALIZED).has_value());
  EXPECT_FALSE(gl_layout_of(VK_IMAGE_LAYOUT_PRESENT_SRC_KHR).has_value());
  EXPECT_EQ(gl_layout_name(0x1234), "0x1234");
}

}  // namespace
