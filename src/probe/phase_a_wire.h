// Phase A as the warm worker finds it and sends it to the parent: the parent
// then loads no driver of its own (docs/probe-engine.md, "Phase A in the worker").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "extmem/cuda/enumerate.h"
#include "extmem/core/error.h"
#include "extmem/gles/enumerate.h"
#include "extmem/probe/findings.h"
#include "extmem/vulkan/enumerate.h"

namespace extmem::probe {

/// What phase A found: each part a value or the error that part met.
struct PhaseAFindings {
  Result<vk::VulkanEnumeration> vulkan = Error{"phase A", ErrorKind::protocol, {}, "not enumerated"};
  Result<std::uint32_t> selected = Error{"phase A", ErrorKind::protocol, {}, "no device selected"};  ///< vk::select_device
  GlDriverChoice gl_driver;  ///< put in place before the EGL context was made
  Result<gles::GlesInfo> gles = Error{"phase A", ErrorKind::protocol, {}, "not enumerated"};
  Result<cuda::Enumeration> cuda = Error{"phase A", ErrorKind::protocol, {}, "not enumerated"};
};

/// The finding for a driver phase A did not start because no selected row uses it
/// (`driver`: "GLES" or "CUDA"): both modes report it in the same words.
Error driver_not_started(const char* driver);

/// JSON text of `f` (under os::kMaxPayload for any device count a machine has).
std::string encode_phase_a(const PhaseAFindings& f);

/// The findings from encode_phase_a's text, checked: at most os::kMaxPayload
/// bytes; exactly what encode_phase_a() writes for the decoded value (no unknown
/// field, every number within its member's type); errors of the kinds and code
/// spaces error.h names; GL driver names gl_driver.h accepts; a selected device
/// the enumeration holds. Errors: protocol, step "decode phase A" or "decode
/// phase A /JSON/POINTER" naming the first field refused; detail what is accepted.
Result<PhaseAFindings> decode_phase_a(std::string_view text);

}  // namespace extmem::probe
