#include "probe/worker/shader_copy.h"

#include <algorithm>

#include <fmt/format.h>

#include "probe/worker/copy_words_spv.h"  // generated at build time from copy_words.comp

namespace extmem::probe::measure {
namespace {
constexpr std::uint32_t kCopyLocalSize = 256;   // local_size_x in copy_words.comp
constexpr std::uint32_t kCopyMaxGroups = 65535;  // maxComputeWorkGroupCount[0]'s required minimum (Vulkan spec, "Limits")
}  // namespace

Result<std::unique_ptr<ShaderCopy>> ShaderCopy::create(const vk::Device& device) {
  auto fns = vk::load_compute_fns(device);
  if (!fns) return std::move(fns).error();
  std::unique_ptr<ShaderCopy> c(new ShaderCopy(device));
  c->fn_ = *fns;
  VkPhysicalDeviceProperties props{};
  device.instance().fn().vkGetPhysicalDeviceProperties(device.physical(), &props);
  c->max_bytes_ = static_cast<VkDeviceSize>(props.limits.maxStorageBufferRange) / 16 * 16;
  const VkDevice dev = device.handle();
  const vk::ComputeFns& f = c->fn_;

  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smci.codeSize = sizeof(kCopyWordsSpirv);
  smci.pCode = kCopyWordsSpirv;
  if (VkResult r = f.vkCreateShaderModule(dev, &smci, nullptr, &c->shader_); r != VK_SUCCESS)
    return vk::vk_error("vkCreateShaderModule(copy_words)", r);
  VkDescriptorSetLayoutBinding bindings[2]{};
  for (std::uint32_t i = 0; i < 2; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dslci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dslci.bindingCount = 2;
  dslci.pBindings = bindings;
  if (VkResult r = f.vkCreateDescriptorSetLayout(dev, &dslci, nullptr, &c->set_layout_); r != VK_SUCCESS)
    return vk::vk_error("vkCreateDescriptorSetLayout(copy_words)", r);
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(std::uint32_t)};
  VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &c->set_layout_;
  plci.pushConstantRangeCount = 1;
  plci.pPushConstantRanges = &push;
  if (VkResult r = f.vkCreatePipelineLayout(dev, &plci, nullptr, &c->layout_); r != VK_SUCCESS)
    return vk::vk_error("vkCreatePipelineLayout(copy_words)", r);
  VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = c->shader_;
  cpci.stage.pName = "main";
  cpci.layout = c->layout_;
  if (VkResult r = f.vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, nullptr, &c->pipeline_); r != VK_SUCCESS)
    return vk::vk_error("vkCreateComputePipelines(copy_words)", r);
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * kMaxPairs};
  VkDescriptorPoolCreateInfo dpci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpci.maxSets = kMaxPairs;
  dpci.poolSizeCount = 1;
  dpci.pPoolSizes = &size;
  if (VkResult r = f.vkCreateDescriptorPool(dev, &dpci, nullptr, &c->pool_); r != VK_SUCCESS)
    return vk::vk_error("vkCreateDescriptorPool(copy_words)", r);
  return c;
}

ShaderCopy::~ShaderCopy() {
  const VkDevice dev = device_.handle();
  // Destroying the pool frees its sets.
  if (pool_ != VK_NULL_HANDLE) fn_.vkDestroyDescriptorPool(dev, pool_, nullptr);
  if (pipeline_ != VK_NULL_HANDLE) fn_.vkDestroyPipeline(dev, pipeline_, nullptr);
  if (layout_ != VK_NULL_HANDLE) fn_.vkDestroyPipelineLayout(dev, layout_, nullptr);
  if (set_layout_ != VK_NULL_HANDLE) fn_.vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
  if (shader_ != VK_NULL_HANDLE) fn_.vkDestroyShaderModule(dev, shader_, nullptr);
}

Result<VkDescriptorSet> ShaderCopy::bind(VkBuffer src, VkBuffer dst, VkDeviceSize bytes) {
  if (bytes == 0 || bytes % 16 != 0 || bytes > max_bytes_)
    return Error{"shader copy", ErrorKind::invalid_argument, {},
                 fmt::format("{} bytes; accepted: a non-zero multiple of 16 up to maxStorageBufferRange ({} bytes)",
                             bytes, max_bytes_)};
  for (const Pair& p : pairs_)
    if (p.src == src && p.dst == dst && p.bytes == bytes) return p.set;
  if (pairs_.size() == kMaxPairs)
    return Error{"shader copy", ErrorKind::invalid_argument, {}, fmt::format("more than {} buffer pairs", kMaxPairs)};
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &set_layout_;
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (VkResult r = fn_.vkAllocateDescriptorSets(device_.handle(), &ai, &set); r != VK_SUCCESS)
    return vk::vk_error("vkAllocateDescriptorSets(copy_words)", r);
  VkDescriptorBufferInfo info[2] = {{src, 0, bytes}, {dst, 0, bytes}};
  VkWriteDescriptorSet w[2]{};
  for (std::uint32_t i = 0; i < 2; ++i) {
    w[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    w[i].dstSet = set;
    w[i].dstBinding = i;
    w[i].descriptorCount = 1;
    w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w[i].pBufferInfo = &info[i];
  }
  fn_.vkUpdateDescriptorSets(device_.handle(), 2, w, 0, nullptr);
  pairs_.push_back(Pair{src, dst, bytes, set});
  return set;
}

void ShaderCopy::record(VkCommandBuffer cmd, VkDescriptorSet pair, VkDeviceSize bytes, unsigned copies) const {
  const vk::DeviceFns& d = device_.fn();
  auto barrier = [&](VkPipelineStageFlags from, VkAccessFlags from_access, VkPipelineStageFlags to, VkAccessFlags to_access) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    b.srcAccessMask = from_access;
    b.dstAccessMask = to_access;
    d.vkCmdPipelineBarrier(cmd, from, to, 0, 1, &b, 0, nullptr, 0, nullptr);
  };
  constexpr VkAccessFlags rw = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  barrier(VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
  fn_.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  fn_.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &pair, 0, nullptr);
  const auto words = static_cast<std::uint32_t>(bytes / 16);
  fn_.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof words, &words);
  const std::uint32_t groups = std::min<std::uint32_t>(kCopyMaxGroups, (words + kCopyLocalSize - 1) / kCopyLocalSize);
  for (unsigned c = 0; c < copies; ++c) {
    if (c > 0)
      barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
    fn_.vkCmdDispatch(cmd, groups, 1, 1);
  }
  barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
          VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | rw | VK_ACCESS_HOST_READ_BIT);
}

}  // namespace extmem::probe::measure
