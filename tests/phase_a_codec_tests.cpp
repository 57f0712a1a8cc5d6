// Phase A's one JSON form (src/probe/phase_a_codec.h): what the document embeds
// is what a worker sends (src/probe/phase_a_wire.h), and both read back whole.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <string>

#include "extmem/os/ipc.h"
#include "extmem/probe/probe.h"
#include "extmem/probe/write.h"
#include "probe/phase_a_codec.h"
#include "probe/phase_a_wire.h"

namespace {

using extmem::CodeSpace;
using extmem::Error;
using extmem::ErrorKind;
using extmem::probe::PhaseA;
using extmem::probe::phase_a_from_json;
using extmem::probe::phase_a_json;
using nlohmann::json;

// A phase A with every field set to something other than its default.
PhaseA full_phase_a() {
  PhaseA a;
  a.context.uid = 1000;
  a.context.pid = 4242;
  a.context.selinux = "none";
  a.context.kernel = "6.1.0-18-amd64";
  a.context.hostname = "node7";
  a.context.drm_render_nodes = {"/dev/dri/renderD128"};
  a.context.private_runtime_dir = "/tmp/extmem-runtime-abc";
  a.context.runtime_dir_was = "unset";
  a.vulkan.loader_version = "1.3.239";
  extmem::vk::DeviceInfo d;
  d.index = 1;
  d.name = "gpu";
  d.vendor_id = 0x10de;
  d.device_id = 0x2330;
  d.device_type = "DISCRETE_GPU";
  d.api_version = "1.3.277";
  d.driver_version = 0x91000000;
  d.driver_name = "NVIDIA";
  d.driver_info = "580.159.04";
  d.device_uuid = "00112233445566778899aabbccddeeff";
  d.driver_uuid = "ffeeddccbbaa99887766554433221100";
  d.heaps = {{1ull << 36, 1, "DEVICE_LOCAL"}};
  d.types = {{0, 0, 7, "DEVICE_LOCAL|HOST_VISIBLE|HOST_COHERENT"}};
  d.extensions = {{"VK_EXT_external_memory_dma_buf", false}, {"VK_KHR_external_memory_fd", true}};
  d.external_buffers = {{"OPAQUE_FD", 1, 6, true, true, false, 1, 1}};
  d.external_semaphores = {{"OPAQUE_FD", "timeline", true, 3, true, true, 1, 1}, {"SYNC_FD", "binary", true, 0, false, false, 0, 0}};
  d.min_imported_host_pointer_alignment = 4096;
  d.max_image_dimension_2d = 32768;
  extmem::vk::ExternalImageInfo x;
  x.handle_type = "DMA_BUF";
  x.tiling = "OPTIMAL";
  x.result = "VK_ERROR_FORMAT_NOT_SUPPORTED";
  x.result_code = -11;
  d.external_images = {x};
  extmem::vk::DrmModifierInfo m;
  m.modifier = 0xf000000000000001ull;  // above 2^63: JSON's unsigned range
  m.plane_count = 1;
  m.dma_buf_result = "VK_SUCCESS";
  m.dma_buf_exportable = true;
  d.drm_modifiers = {m};
  a.vulkan.devices = {extmem::vk::DeviceInfo{}, d};  // selected is a position in the list: device 1 is the second
  a.selected = 1;
  a.gl_driver.requested = "auto";
  a.gl_driver.served = "zink";
  a.gl_driver.why = "auto: lavapipe";
  a.gl_driver.env = {{"LIBGL_ALWAYS_SOFTWARE", "1"}, {"MESA_LOADER_DRIVER_OVERRIDE", "zink"}};
  extmem::gles::GlesInfo g;
  g.platform = "surfaceless";
  g.gl_renderer = "zink (llvmpipe)";
  g.extensions = {{"EGL_ANDROID_get_native_client_buffer", false}, {"GL_EXT_memory_object", true}};
  g.device_uuid = d.device_uuid;
  a.gles = g;
  extmem::cuda::Enumeration c;
  c.library = "libcuda.so.1";
  c.driver_version = 13000;
  extmem::cuda::DeviceInfo cd;
  cd.name = "H100";
  cd.uuid = d.device_uuid;
  cd.total_mem = 80ull << 30;
  cd.posix_fd = 1;
  cd.fabric = 0;
  cd.granularity_minimum = 2u << 20;
  c.devices = {cd};
  a.cuda = c;
  a.fd_transport.attempted = true;
  a.fd_transport.how = "a child of the probe";
  a.fd_transport.refused = extmem::os_error("pidfd_getfd(pid 12, fd 5)", 1);
  a.fd_transport.ptrace_scope = 1;
  return a;
}

// Every field survives the trip, and the trip is exact.
TEST(PhaseACodec, RoundTripKeepsEveryField) {
  const PhaseA a = full_phase_a();
  const json once = phase_a_json(a);
  auto back = phase_a_from_json(once, "phase A");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(phase_a_json(*back), once);
  EXPECT_EQ(back->context.private_runtime_dir, "/tmp/extmem-runtime-abc");
  EXPECT_EQ(back->selected, 1u);
  const auto& b = back->vulkan.devices.at(1);
  EXPECT_EQ(b.extensions, a.vulkan.devices[1].extensions);
  EXPECT_EQ(b.external_buffers.at(0).handle_type_bit, 1u);  // the three fields the wire had and the document lacked
  EXPECT_EQ(b.external_images.at(0).result_code, -11);
  EXPECT_EQ(b.drm_modifiers.at(0).modifier, 0xf000000000000001ull);
  EXPECT_EQ(back->gl_driver.env, a.gl_driver.env);
  ASSERT_TRUE(back->gles);
  EXPECT_EQ(back->gles->extensions, a.gles->extensions);
  ASSERT_TRUE(back->cuda);
  EXPECT_EQ(back->cuda->devices.at(0).granularity_minimum, 2u << 20);
  ASSERT_TRUE(back->fd_transport.refused);
  EXPECT_TRUE(back->fd_transport.attempted);
  EXPECT_FALSE(back->fd_transport.permitted);
  EXPECT_TRUE(back->fd_transport.refused->is_errno(1));  // the errno crosses as a number, not only as "EPERM (1)"
  EXPECT_EQ(back->fd_transport.ptrace_scope, 1);
  // The derived facts are written from the rest.
  EXPECT_EQ(once["gles"]["device_uuid_vs_vulkan"], "match");
  EXPECT_EQ(once["cuda"]["devices"][0]["matches_vulkan_device"], true);
  EXPECT_EQ(once["fd_transport"]["pidfd_getfd"], "refused");
}

// A part that failed keeps its message for people and its error for code.
TEST(PhaseACodec, FailedPartsKeepTheirKindAndNativeCode) {
  PhaseA a = full_phase_a();
  a.gles = extmem::coded_error("eglInitialize", ErrorKind::driver, CodeSpace::egl_error, 0x3001, "EGL_NOT_INITIALIZED",
                               "no display");
  a.cuda = Error{"dlopen(libcuda.so.1)", ErrorKind::no_driver, "no CUDA driver", "missing"};
  const json once = phase_a_json(a);
  EXPECT_EQ(once["gles"]["error"], a.gles.error().message());
  EXPECT_EQ(once["gles"]["failure"]["kind"], "driver");
  EXPECT_EQ(once["gles"]["failure"]["space"], "egl_error");
  auto back = phase_a_from_json(once, "phase A");
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_FALSE(back->gles);
  EXPECT_EQ(back->gles.error().space, CodeSpace::egl_error);
  EXPECT_EQ(back->gles.error().native, 0x3001);
  ASSERT_FALSE(back->cuda);
  EXPECT_EQ(back->cuda.error().kind, ErrorKind::no_driver);  // the parent's SKIP, never read from the words
  EXPECT_EQ(back->cuda.error().message(), a.cuda.error().message());
  EXPECT_EQ(phase_a_json(*back), once);
}

// The member a refusal names: the step after "phase A".
std::string refused_at(const json& j) {
  auto r = phase_a_from_json(j, "phase A");
  EXPECT_FALSE(r) << j.dump();
  if (r) return "accepted";
  EXPECT_EQ(r.error().kind, ErrorKind::protocol);
  return r.error().step;
}

TEST(PhaseACodec, RefusesWhatItDoesNotWrite) {
  const json good = phase_a_json(full_phase_a());
  json j = good;
  j["vulkan"]["devices"][1]["colour"] = "blue";
  EXPECT_EQ(refused_at(j), "phase A /vulkan/devices/1/colour");
  j = good;
  j["extra"] = 1;
  EXPECT_EQ(refused_at(j), "phase A /extra");
  j = good;
  j["vulkan"]["devices"][1]["vendor_id"] = -1;  // a uint32_t would wrap to 4294967295
  EXPECT_EQ(refused_at(j), "phase A /vulkan/devices/1/vendor_id");
  j = good;
  j["vulkan"]["devices"][1]["extensions"]["VK_KHR_external_memory_fd"] = 1;
  EXPECT_NE(refused_at(j), "accepted");
  j = good;
  j["gles"]["device_uuid_vs_vulkan"] = "mismatch";  // a derived fact that does not follow from the rest
  EXPECT_EQ(refused_at(j), "phase A /gles/device_uuid_vs_vulkan");
  j = good;
  j["fd_transport"]["pidfd_getfd"] = "maybe";
  EXPECT_EQ(refused_at(j), "phase A /fd_transport/pidfd_getfd");
  j = good;
  j["cuda"].erase("library");
  EXPECT_EQ(refused_at(j), "phase A");  // nlohmann names the missing key in the detail
  EXPECT_EQ(refused_at(json::array()), "phase A");
}

TEST(PhaseACodec, RefusesErrorsOfKindsOrSpacesThisBuildDoesNotName) {
  PhaseA a = full_phase_a();
  a.cuda = Error{"cuInit", ErrorKind::driver, "CUDA_ERROR_NO_DEVICE", ""};
  const json good = phase_a_json(a);
  json j = good;
  j["cuda"]["failure"]["kind"] = "catastrophe";
  EXPECT_EQ(refused_at(j), "phase A /cuda/failure");
  j = good;
  j["cuda"]["failure"]["space"] = 3;  // names, not numbers
  EXPECT_EQ(refused_at(j), "phase A /cuda/failure");
  j = good;
  j["fd_transport"]["refused"]["native"] = "EPERM";
  EXPECT_EQ(refused_at(j), "phase A /fd_transport/refused");
}

TEST(PhaseACodec, RefusesASelectedDeviceTheEnumerationLacks) {
  json j = phase_a_json(full_phase_a());
  j["vulkan"]["selected"] = 2;
  EXPECT_EQ(refused_at(j), "phase A /vulkan/selected");
  j["vulkan"]["selected"] = -1;
  EXPECT_EQ(refused_at(j), "phase A /vulkan/selected");
}

TEST(PhaseACodec, RefusesUnknownGlDriverNames) {
  json j = phase_a_json(full_phase_a());
  j["gl_driver"]["served"] = "auto";
  EXPECT_EQ(refused_at(j), "phase A /gl_driver/served");
  j = phase_a_json(full_phase_a());
  j["gl_driver"]["requested"] = "mesa";
  EXPECT_EQ(refused_at(j), "phase A /gl_driver/requested");
}

// The --json document's phase-A members are phase_a_json's, and read back as phase A.
TEST(PhaseACodec, TheDocumentEmbedsTheOneForm) {
  extmem::probe::Findings f;
  f.phase_a = full_phase_a();
  const extmem::probe::ProbeOptions o;
  const json doc = json::parse(extmem::probe::json_document(f, o));
  const json members = phase_a_json(f.phase_a);
  json from_doc = json::object();
  for (const auto& [key, value] : members.items()) {
    ASSERT_TRUE(doc.contains(key)) << key;
    EXPECT_EQ(doc[key], value) << key;
    from_doc[key] = doc[key];
  }
  auto back = phase_a_from_json(from_doc, "document");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(phase_a_json(*back), members);
}

// ---- the worker's message ----

using extmem::probe::decode_phase_a;
using extmem::probe::encode_phase_a;
using extmem::probe::settle_phase_a;

TEST(PhaseAWire, CarriesThePhaseAOrTheRunsError) {
  const PhaseA a = full_phase_a();
  auto sent = decode_phase_a(encode_phase_a(a));
  ASSERT_TRUE(sent) << sent.error().message();
  ASSERT_TRUE(*sent);
  EXPECT_EQ(phase_a_json(**sent), phase_a_json(a));
  const Error usage{"", ErrorKind::invalid_argument, {}, "--device=9: no such device"};
  auto failed = decode_phase_a(encode_phase_a(extmem::Result<PhaseA>(usage)));
  ASSERT_TRUE(failed) << failed.error().message();
  ASSERT_FALSE(*failed);
  EXPECT_EQ(failed->error().kind, ErrorKind::invalid_argument);  // exit 2, decided by kind
  EXPECT_EQ(failed->error().message(), usage.message());
}

TEST(PhaseAWire, SettlesAsFindDoes) {
  extmem::probe::PhaseAFindings f;
  f.vulkan = extmem::coded_error("vkCreateInstance", ErrorKind::driver, CodeSpace::vk_result, -9,
                                 "VK_ERROR_INCOMPATIBLE_DRIVER");
  auto none = settle_phase_a(f);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().step, "cannot run");
  EXPECT_EQ(none.error().kind, ErrorKind::unsupported);
  f.vulkan = full_phase_a().vulkan;
  f.selected = Error{"--device", ErrorKind::invalid_argument, {}, "9 names no device"};
  auto unselected = settle_phase_a(f);
  ASSERT_FALSE(unselected);
  EXPECT_EQ(unselected.error().kind, ErrorKind::invalid_argument);
  f.selected = 1u;
  f.cuda = extmem::probe::driver_not_started("CUDA");
  auto settled = settle_phase_a(f);
  ASSERT_TRUE(settled) << settled.error().message();
  EXPECT_EQ(settled->selected, 1u);
  EXPECT_FALSE(settled->cuda);
}

// The fuzzer's seeds are messages a lavapipe worker sends: both must decode, or the
// fuzzer starts from nothing.
TEST(PhaseAWire, TheFuzzSeedsDecode) {
  for (const char* seed : {"lavapipe", "no_vulkan"}) {
    std::ifstream in(std::string(EXTMEM_SOURCE_DIR) + "/fuzz/corpus/phase_a_wire/" + seed);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto r = decode_phase_a(text);
    EXPECT_TRUE(r) << seed << ": " << r.error().message();
  }
}

TEST(PhaseAWire, MalformedMessagesAreProtocolErrors) {
  for (const char* text : {"", "not json", "{}", "[]", R"({"phase_a": {}, "error": {}})", R"({"error": {"step": 1}})",
                           R"({"phase_a": 3})"}) {
    auto r = decode_phase_a(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().kind, ErrorKind::protocol) << text;
    EXPECT_EQ(r.error().step.rfind("decode phase A", 0), 0u) << text;
  }
  auto big = decode_phase_a(std::string(extmem::os::kMaxPayload + 1, ' '));
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().step, "decode phase A");
}

}  // namespace
