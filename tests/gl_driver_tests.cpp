// --gl-driver's decision (src/probe/gl_driver.h; docs/probe.md, "Which GL serves"):
// pure rules, no driver loaded. The real drivers are in gles_tests.cpp.
#include <gtest/gtest.h>

#include "probe/gl_driver.h"

namespace {

using extmem::probe::choose_gl_driver;
using extmem::probe::VulkanDriverFacts;

// What lavapipe reports on Mesa 22.3 (docs/results/lavapipe-mesa-22.3.md) and what NVIDIA's driver does.
const VulkanDriverFacts kLavapipe{0x10005, "llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe"};
const VulkanDriverFacts kNvidia{0x10de, "NVIDIA H200", "NVIDIA"};

std::string env_value(const extmem::probe::GlDriverChoice& c, const std::string& name) {
  for (const auto& [n, v] : c.env)
    if (n == name) return v;
  return "(unset)";
}

// auto on lavapipe is zink on the software path, and the reason names the device.
TEST(GlDriver, AutoOnLavapipeIsZink) {
  auto c = choose_gl_driver("auto", kLavapipe, nullptr, "");
  EXPECT_EQ(c.served, "zink");
  EXPECT_EQ(env_value(c, "MESA_LOADER_DRIVER_OVERRIDE"), "zink");
  EXPECT_EQ(env_value(c, "LIBGL_ALWAYS_SOFTWARE"), "1");
  EXPECT_NE(c.why.find("lavapipe"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("llvmpipe (LLVM 15.0.6"), std::string::npos) << c.why;
}

// auto on any other device keeps the system GL and sets nothing.
TEST(GlDriver, AutoOnNvidiaIsSystem) {
  auto c = choose_gl_driver("auto", kNvidia, nullptr, "/usr/share/glvnd/egl_vendor.d/50_mesa.json");
  EXPECT_EQ(c.served, "system");
  EXPECT_TRUE(c.env.empty()) << c.env_text();
  EXPECT_NE(c.why.find("NVIDIA H200"), std::string::npos) << c.why;
}

// A Mesa-vendor device that is not lavapipe (a hardware Mesa driver) is not taken for it.
TEST(GlDriver, OtherMesaDriverIsNotLavapipe) {
  EXPECT_FALSE(extmem::probe::is_lavapipe({0x10005, "llvmpipe", "radv"}));
  EXPECT_FALSE(extmem::probe::is_lavapipe({0x1002, "x", "llvmpipe"}));
  EXPECT_TRUE(extmem::probe::is_lavapipe(kLavapipe));
}

// A user's MESA_LOADER_DRIVER_OVERRIDE is left alone by auto and reported.
TEST(GlDriver, AutoRespectsUserOverride) {
  auto c = choose_gl_driver("auto", kLavapipe, "swrast", "");
  EXPECT_EQ(c.served, "system");
  EXPECT_TRUE(c.env.empty()) << c.env_text();
  EXPECT_NE(c.why.find("MESA_LOADER_DRIVER_OVERRIDE=swrast"), std::string::npos) << c.why;
}

// An explicit choice replaces the user's override and says that it did.
TEST(GlDriver, ExplicitChoiceReplacesUserOverride) {
  auto c = choose_gl_driver("llvmpipe", kLavapipe, "zink", "");
  EXPECT_EQ(c.served, "llvmpipe");
  EXPECT_EQ(env_value(c, "MESA_LOADER_DRIVER_OVERRIDE"), "swrast");
  EXPECT_EQ(env_value(c, "GALLIUM_DRIVER"), "llvmpipe");
  EXPECT_NE(c.why.find("replaces MESA_LOADER_DRIVER_OVERRIDE=zink"), std::string::npos) << c.why;
}

// system sets nothing, whatever the device; an unreadable device under auto is the system GL too.
TEST(GlDriver, SystemAndUnknownDeviceSetNothing) {
  EXPECT_TRUE(choose_gl_driver("system", kLavapipe, nullptr, "v.json").env.empty());
  auto c = choose_gl_driver("auto", std::nullopt, nullptr, "v.json");
  EXPECT_EQ(c.served, "system");
  EXPECT_NE(c.why.find("could not be read"), std::string::npos) << c.why;
}

// Mesa's glvnd vendor file is named for zink and llvmpipe, so glvnd cannot give EGL to another vendor first.
TEST(GlDriver, MesaVendorFileNamedWhenSettingADriver) {
  auto c = choose_gl_driver("zink", kNvidia, nullptr, "/x/50_mesa.json");
  EXPECT_EQ(env_value(c, "__EGL_VENDOR_LIBRARY_FILENAMES"), "/x/50_mesa.json");
  EXPECT_EQ(env_value(choose_gl_driver("zink", kNvidia, nullptr, ""), "__EGL_VENDOR_LIBRARY_FILENAMES"), "(unset)");
}

// The renderer check: zink's GL_RENDERER starts with "zink", llvmpipe's with "llvmpipe".
TEST(GlDriver, RendererMatches) {
  auto zink = choose_gl_driver("zink", kLavapipe, nullptr, "");
  EXPECT_TRUE(extmem::probe::renderer_matches(zink, "zink (llvmpipe (LLVM 15.0.6, 256 bits))"));  // Mesa 22.3
  EXPECT_TRUE(extmem::probe::renderer_matches(zink, "zink Vulkan 1.4(llvmpipe (LLVM 19.1.7, 256 bits) (MESA_LLVMPIPE))"));
  EXPECT_FALSE(extmem::probe::renderer_matches(zink, "llvmpipe (LLVM 15.0.6, 256 bits)"));
  EXPECT_TRUE(extmem::probe::renderer_matches(choose_gl_driver("system", kNvidia, nullptr, ""), "NVIDIA H200/PCIe/SSE2"));
}

}  // namespace
