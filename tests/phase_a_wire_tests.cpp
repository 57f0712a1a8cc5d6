// Phase A's wire form (src/probe/phase_a_wire.h): what the worker sends is what the parent reads.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "extmem/os/ipc.h"
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
  e.devices = {extmem::vk::DeviceInfo{}, d};  // selected is a position in the list: device 1 is the second
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
  ASSERT_EQ(back->vulkan->devices.size(), 2u);
  const auto& b = back->vulkan->devices[1];
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

// A small valid phase A: one device, selected; the other parts errors.
nlohmann::json valid_findings() {
  extmem::vk::VulkanEnumeration e;
  e.loader_version = "1.3.239";
  extmem::vk::DeviceInfo d;
  d.name = "gpu";
  d.heaps = {{1ull << 33, 1, "DEVICE_LOCAL"}};
  d.types = {{0, 0, 7, "DEVICE_LOCAL"}};
  e.devices = {d};
  PhaseAFindings f;
  f.vulkan = e;
  f.selected = 0u;
  f.gles = extmem::Error{"eglInitialize", extmem::ErrorKind::driver, "EGL_NOT_INITIALIZED", ""};
  f.cuda = extmem::probe::driver_not_started("CUDA");
  return nlohmann::json::parse(encode_phase_a(f));
}

// The field a refusal names: the step after "decode phase A".
std::string refused_at(const nlohmann::json& j) {
  auto r = decode_phase_a(j.dump());
  EXPECT_FALSE(r) << j.dump();
  if (r) return "accepted";
  EXPECT_EQ(r.error().kind, extmem::ErrorKind::protocol);
  return r.error().step;
}

TEST(PhaseAWire, TheValidSampleIsAccepted) {
  auto r = decode_phase_a(valid_findings().dump());
  ASSERT_TRUE(r) << r.error().message();
}

TEST(PhaseAWire, RefusesAnUnknownFieldByItsPath) {
  nlohmann::json j = valid_findings();
  j["vulkan"]["value"]["devices"][0]["colour"] = "blue";
  EXPECT_EQ(refused_at(j), "decode phase A /vulkan/value/devices/0/colour");
  nlohmann::json k = valid_findings();
  k["extra"] = 1;
  EXPECT_EQ(refused_at(k), "decode phase A /extra");
}

TEST(PhaseAWire, RefusesNumbersOutsideTheirMembersRange) {
  nlohmann::json j = valid_findings();
  j["vulkan"]["value"]["devices"][0]["vendor_id"] = -1;  // a uint32_t would wrap to 4294967295
  EXPECT_EQ(refused_at(j), "decode phase A /vulkan/value/devices/0/vendor_id");
  nlohmann::json k = valid_findings();
  k["gles"]["error"]["space"] = 300;  // a uint8_t would wrap
  EXPECT_EQ(refused_at(k), "decode phase A /gles/error/space");
}

TEST(PhaseAWire, RefusesAnErrorKindThisBuildDoesNotName) {
  nlohmann::json j = valid_findings();
  j["cuda"]["error"]["kind"] = 99;
  EXPECT_EQ(refused_at(j), "decode phase A error");
}

TEST(PhaseAWire, RefusesASelectedDeviceTheEnumerationLacks) {
  nlohmann::json j = valid_findings();
  j["selected"]["value"] = 1;
  EXPECT_EQ(refused_at(j), "decode phase A /selected");
}

TEST(PhaseAWire, RefusesUnknownGlDriverNames) {
  nlohmann::json j = valid_findings();
  j["gl_driver"]["served"] = "auto";
  EXPECT_EQ(refused_at(j), "decode phase A /gl_driver/served");
  nlohmann::json k = valid_findings();
  k["gl_driver"]["requested"] = "mesa";
  EXPECT_EQ(refused_at(k), "decode phase A /gl_driver/requested");
}

TEST(PhaseAWire, RefusesTextOverTheFrameBound) {
  auto r = decode_phase_a(std::string(extmem::os::kMaxPayload + 1, ' '));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().step, "decode phase A");
}

}  // namespace
