// The drivers a route-half process keeps from one route to the next. A warm
// worker runs many routes; creating a Vulkan instance and device, an EGL
// context or a CUDA context for each would cost more than the route itself
// (docs/probe.md, "How it runs"). A fresh child (--isolate=route) goes through
// the same functions, so both modes open the same objects the same way.
//
// Everything here is for one thread (the worker's) and lives until the process ends.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/cuda/enumerate.h"
#include "probe/gl_driver.h"
#include "gles/egl_context.h"
#include "vulkan/context.h"

namespace extmem::probe::drivers {

/// The process's Vulkan instance, created on first use and kept (its error too).
Result<std::shared_ptr<vk::Instance>> vulkan_instance();

/// Device extensions every route may ask for; the kept device enables those the device has.
/// A route wanting one outside this list gets a device of its own (not kept).
const std::vector<std::string>& route_device_extensions();

/// The Vulkan device `index`, with route_device_extensions() enabled where present,
/// created on first use and kept. A failed creation is kept too, so every route of
/// the process sees the same error (vk::Instance::create's or vk::Device::create's).
/// `wanted` outside route_device_extensions(): a fresh device for this caller only.
Result<std::shared_ptr<vk::Device>> vulkan_device(std::uint32_t index, const std::vector<std::string>& wanted);

/// Records --gl-driver for this process (auto, system, zink or llvmpipe; checked
/// by the parent) and the Vulkan device index `auto` looks at. Loads nothing.
void set_gl_request(std::string requested, std::uint32_t device_index);

/// The GL driver of this process (gl_driver.h), decided on the first call and
/// written into the environment then, so it must come before libEGL is loaded
/// and while no other thread reads the environment; egl_context() calls it.
/// `auto` without a user MESA_LOADER_DRIVER_OVERRIDE reads the device's
/// VkPhysicalDeviceProperties2 on the kept instance (no device is created);
/// an instance or device that cannot be read makes it the system GL, saying why.
const GlDriverChoice& gl_driver();

/// gl_driver()'s decision without writing the environment (yet): a caller that
/// has other threads running learns whether it must let them finish first.
const GlDriverChoice& decide_gl_driver();

/// The process's EGL/GLES context (gles::EglContext::create), created on first use
/// and kept, current on this thread; gl_driver() is put in place first. Pending GL errors are drained before it is
/// handed out, so a route never reads an error left by the previous one.
/// Errors: gles::EglContext::create()'s, kept like vulkan_device()'s.
Result<std::shared_ptr<gles::EglContext>> egl_context();

/// Phase A's CUDA enumeration (cuda::enumerate), leaving the driver library loaded
/// and initialised for keep_cuda_warm() and the routes, so cuInit runs once per process.
/// Safe to run on a thread of its own beside the Vulkan and EGL start-up.
Result<cuda::Enumeration> cuda_enumeration();

/// Keeps the CUDA driver loaded and the primary context of the device matching
/// `vulkan_uuid` retained for the process's life, so a route's own retain and
/// release (cuda/route_util.h) do not create and destroy it each time. Best
/// effort: a failure is left for the route to meet and report. No-op in a build
/// without the CUDA rows.
void keep_cuda_warm(const std::string& vulkan_uuid);

/// Objects created through extmem's wrappers and not yet released, for the
/// worker's per-route hygiene check: Vulkan buffers and device memories
/// (vk::live_objects()), CUDA device buffers and imports (cuda live counts).
struct LiveObjects {
  long vk_buffers = 0;
  long vk_memories = 0;
  long gl_buffers = 0;
  bool operator==(const LiveObjects&) const = default;
};
LiveObjects live_objects();
/// The count behind LiveObjects::gl_buffers: the GL family's shared buffer
/// (routes/gles/import.h) adds one while it exists. Kept here so that the worker
/// needs nothing from a family.
std::atomic<long>& live_gl_buffers();

}  // namespace extmem::probe::drivers
