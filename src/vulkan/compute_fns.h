// Device entry points of compute work (shader modules, compute pipelines,
// descriptor sets, dispatch) beyond vk::DeviceFns, for the parts that run a
// shader: --measure's shader copy (probe/worker/shader_copy.h) and reclaim's
// painter (reclaim/vk_fns.h takes this list into its own table).
#pragma once

#include "vulkan/context.h"

namespace extmem::vk {

#define EXTMEM_VK_COMPUTE_FUNCS(X)   \
  X(vkCreateShaderModule)            \
  X(vkDestroyShaderModule)           \
  X(vkCreateDescriptorSetLayout)     \
  X(vkDestroyDescriptorSetLayout)    \
  X(vkCreatePipelineLayout)          \
  X(vkDestroyPipelineLayout)         \
  X(vkCreateComputePipelines)        \
  X(vkDestroyPipeline)               \
  X(vkCreateDescriptorPool)          \
  X(vkDestroyDescriptorPool)         \
  X(vkAllocateDescriptorSets)        \
  X(vkFreeDescriptorSets)            \
  X(vkUpdateDescriptorSets)          \
  X(vkCmdBindPipeline)               \
  X(vkCmdBindDescriptorSets)         \
  X(vkCmdPushConstants)              \
  X(vkCmdDispatch)

/// Core Vulkan 1.0 compute entry points of one device.
struct ComputeFns {
  EXTMEM_VK_COMPUTE_FUNCS(EXTMEM_VK_DECLARE)
};

/// Resolves every entry point of EXTMEM_VK_COMPUTE_FUNCS through
/// vkGetDeviceProcAddr. Errors: unsupported, step "vkGetDeviceProcAddr(NAME)",
/// code "null", for the first one the driver does not give.
Result<ComputeFns> load_compute_fns(const Device& device);

}  // namespace extmem::vk
