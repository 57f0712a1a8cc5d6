// Phase A: the run context, and the text of phase A's parts (their JSON: probe/phase_a_codec.h).
#pragma once

#include <iosfwd>
#include <string>

#include "extmem/gles/enumerate.h"
#include "extmem/probe/findings.h"
#include "extmem/vulkan/enumerate.h"

namespace extmem::probe {

RunContext read_run_context();

void print_context(std::ostream& out, const RunContext& ctx);
/// Every device; `selected` is marked. `brief` prints one line per device (--list-devices).
void print_vulkan(std::ostream& out, const vk::VulkanEnumeration& e, int selected, bool brief);

/// GLES part; `selected` is the Vulkan device whose UUIDs the GL ones are compared with.
void print_gles(std::ostream& out, const Result<gles::GlesInfo>& info, const vk::DeviceInfo& selected);
/// "== phase A: GL driver: <served> (requested <requested>): <why>; env: …", and a
/// warning line when GL_RENDERER does not show the driver that was asked for.
void print_gl_driver(std::ostream& out, const GlDriverChoice& choice, const Result<gles::GlesInfo>& info);

}  // namespace extmem::probe
