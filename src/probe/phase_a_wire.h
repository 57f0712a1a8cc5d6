// Phase A as the warm worker finds it and sends it to the parent: the parent
// then loads no driver of its own (docs/probe-engine.md, "Phase A in the worker").
// The message carries phase A in its one JSON form (phase_a_codec.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "extmem/core/error.h"
#include "extmem/cuda/enumerate.h"
#include "extmem/gles/enumerate.h"
#include "extmem/probe/findings.h"
#include "extmem/vulkan/enumerate.h"

namespace extmem::probe {

/// What phase A found, in the process that found it: each part a value or the
/// error that part met.
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

/// The run's phase A from what was found, or the error find() returns for it:
/// no Vulkan enumeration is unsupported, step "cannot run", detail its message;
/// no device selected keeps select_device's message as the detail, kind
/// invalid_argument for a --device naming no device, else unsupported. The
/// PhaseA's context and fd_transport are left default: they are the parent's.
Result<PhaseA> settle_phase_a(PhaseAFindings found);

/// The worker's findings message: {"phase_a": phase_a_json(...)} or, when phase A
/// settled on an error, {"error": error_json(...)} (under os::kMaxPayload for any
/// device count a machine has).
std::string encode_phase_a(const Result<PhaseA>& settled);

/// What encode_phase_a() sent: the settled phase A or its error. The outer error
/// is the message's own: protocol, step "decode phase A" or "decode phase A
/// /JSON/POINTER" naming the first member refused (phase_a_from_json()), at most
/// os::kMaxPayload bytes of one JSON object with exactly one of the two members.
Result<Result<PhaseA>> decode_phase_a(std::string_view text);

}  // namespace extmem::probe
