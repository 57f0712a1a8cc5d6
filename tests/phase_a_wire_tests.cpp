// Phase A's wire form (src/probe/phase_a_wire.h): what the worker sends is what the parent reads.
#include <gtest/gtest.h>

#include "probe/phase_a_wire.h"

namespace {

using extmem::probe::decode_phase_a;
using extmem::probe::encode_phase_a;
using extmem::probe::PhaseAFindings;

// Every field of a device survives the trip, and so does an error in another part.
TEST(PhaseAWire, RoundTripKeepsValuesAndErrors) {
  extmem::vk::VulkanEnumeration e;
  e.loader_version = "1.3.239";
  extmem::vk::DeviceInfo d;
  d.index = 1;
  d.name = "gpu";
  d.heaps = {{1ull << 33, 1, "DEVICE_LOCAL"}};
  d.types = {{0, 0, 7, "DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT"}};
  d.extensions = {{"VK_KHR_external_memory_fd", true}, {"VK_EXT_external_memory_dma_buf", false}};
  d.external_buffers = {{"OPAQUE_FD", 1, 6, true, true, false, 1, 1}};
  d.external_semaphores = {{"OPAQUE_FD", "timeline", true, 3, true, true, 1, 1}, {"SYNC_FD", "binary", true, 0, false, false, 0, 0}};
  d.min_imported_host_pointer_alignment = 4096;
  e.devices = {d};
  PhaseAFindings f;
  f.vulkan = e;
  f.selected = 1u;
  f.gl_driver.requested = "auto";
  f.gl_driver.served = "zink";
  f.gl_driver.why = "auto: lavapipe";
  f.gl_driver.env = {{"LIBGL_ALWAYS_SOFTWARE", "1"}, {"MESA_LOADER_DRIVER_OVERRIDE", "zink"}};
  f.gles = extmem::coded_error("eglInitialize", extmem::ErrorKind::driver, extmem::CodeSpace::egl_error, 0x3001,
                               "EGL_NOT_INITIALIZED", "no display");
  f.cuda = extmem::Error{"dlopen(libcuda.so.1)", extmem::ErrorKind::no_driver, "no CUDA driver", "missing"};
  auto back = decode_phase_a(encode_phase_a(f));
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_TRUE(back->vulkan);
  ASSERT_EQ(back->vulkan->devices.size(), 1u);
  const auto& b = back->vulkan->devices[0];
  EXPECT_EQ(b.name, "gpu");
  EXPECT_EQ(b.heaps[0].size, 1ull << 33);
  EXPECT_EQ(b.types[0].flag_names, "DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT");
  EXPECT_EQ(b.extensions, d.extensions);
  EXPECT_TRUE(b.external_buffers[0].importable);
  ASSERT_EQ(b.external_semaphores.size(), 2u);
  EXPECT_EQ(b.external_semaphores[0].semaphore_type, "timeline");
  EXPECT_TRUE(b.external_semaphores[0].exportable);
  EXPECT_EQ(b.external_semaphores[1].handle_type, "SYNC_FD");
  EXPECT_EQ(b.external_semaphores[1].features, 0u);
  EXPECT_EQ(b.min_imported_host_pointer_alignment, 4096u);
  ASSERT_TRUE(back->selected);
  EXPECT_EQ(*back->selected, 1u);
  EXPECT_EQ(back->gl_driver.served, "zink");
  EXPECT_EQ(back->gl_driver.why, "auto: lavapipe");
  EXPECT_EQ(back->gl_driver.env, f.gl_driver.env);
  ASSERT_FALSE(back->gles);
  EXPECT_EQ(back->gles.error().code, "EGL_NOT_INITIALIZED");
  EXPECT_EQ(back->gles.error().kind, extmem::ErrorKind::driver);
  // The native code crosses with its space: the parent branches on it, never on the name.
  EXPECT_EQ(back->gles.error().space, extmem::CodeSpace::egl_error);
  EXPECT_EQ(back->gles.error().native, 0x3001);
  ASSERT_FALSE(back->cuda);
  EXPECT_EQ(back->cuda.error().message(), f.cuda.error().message());
  EXPECT_EQ(back->cuda.error().kind, extmem::ErrorKind::no_driver);
}

// Text that is not the findings is a protocol error naming what was wrong.
TEST(PhaseAWire, MalformedTextIsAProtocolError) {
  for (const char* text : {"", "not json", "{}", R"({"vulkan": {"value": 3}})"}) {
    auto r = decode_phase_a(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().kind, extmem::ErrorKind::protocol) << text;
    EXPECT_EQ(r.error().step, "decode phase A") << text;
  }
}

}  // namespace
