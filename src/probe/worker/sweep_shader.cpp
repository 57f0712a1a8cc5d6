#include "probe/worker/sweep_shader.h"

#include <algorithm>

#include <fmt/format.h>

#include "probe/worker/sweep_words_spv.h"  // generated at build time from sweep_words.comp

namespace extmem::probe {
namespace {
constexpr std::uint32_t kLocalSize = 256;   // local_size_x in sweep_words.comp
constexpr std::uint32_t kMaxGroups = 1024;  // a grid-stride loop: enough groups to fill a GPU
struct Params {
  std::uint32_t count;
  std::uint32_t scatter;
};
}  // namespace

Result<std::unique_ptr<SweepShader>> SweepShader::create(const vk::Device& device, const Binding& b) {
  VkPhysicalDeviceProperties props{};
  device.instance().fn().vkGetPhysicalDeviceProperties(device.physical(), &props);
  if (b.shared_bytes > props.limits.maxStorageBufferRange || b.shared_bytes / 8 > 0xffffffffull)
    return Error{"sweep shader", ErrorKind::unsupported, {},
                 fmt::format("{} bytes exceed one storage binding (maxStorageBufferRange {})", b.shared_bytes,
                             props.limits.maxStorageBufferRange)};
  auto fns = vk::load_compute_fns(device);
  if (!fns) return std::move(fns).error();
  std::unique_ptr<SweepShader> s(new SweepShader(device));
  s->fn_ = *fns;
  s->count_ = b.count;
  const VkDevice dev = device.handle();
  const vk::ComputeFns& f = s->fn_;

  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smci.codeSize = sizeof(kSweepWordsSpirv);
  smci.pCode = kSweepWordsSpirv;
  if (VkResult r = f.vkCreateShaderModule(dev, &smci, nullptr, &s->shader_); r != VK_SUCCESS)
    return vk::vk_error("vkCreateShaderModule(sweep_words)", r);
  VkDescriptorSetLayoutBinding bindings[3]{};
  for (std::uint32_t i = 0; i < 3; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dslci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dslci.bindingCount = 3;
  dslci.pBindings = bindings;
  if (VkResult r = f.vkCreateDescriptorSetLayout(dev, &dslci, nullptr, &s->set_layout_); r != VK_SUCCESS)
    return vk::vk_error("vkCreateDescriptorSetLayout(sweep_words)", r);
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Params)};
  VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &s->set_layout_;
  plci.pushConstantRangeCount = 1;
  plci.pPushConstantRanges = &push;
  if (VkResult r = f.vkCreatePipelineLayout(dev, &plci, nullptr, &s->layout_); r != VK_SUCCESS)
    return vk::vk_error("vkCreatePipelineLayout(sweep_words)", r);
  VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = s->shader_;
  cpci.stage.pName = "main";
  cpci.layout = s->layout_;
  if (VkResult r = f.vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, nullptr, &s->pipeline_); r != VK_SUCCESS)
    return vk::vk_error("vkCreateComputePipelines(sweep_words)", r);
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3};
  VkDescriptorPoolCreateInfo dpci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpci.maxSets = 1;
  dpci.poolSizeCount = 1;
  dpci.pPoolSizes = &size;
  if (VkResult r = f.vkCreateDescriptorPool(dev, &dpci, nullptr, &s->pool_); r != VK_SUCCESS)
    return vk::vk_error("vkCreateDescriptorPool(sweep_words)", r);
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = s->pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &s->set_layout_;
  if (VkResult r = f.vkAllocateDescriptorSets(dev, &ai, &s->set_); r != VK_SUCCESS)
    return vk::vk_error("vkAllocateDescriptorSets(sweep_words)", r);
  const VkDescriptorBufferInfo info[3] = {{b.shared, 0, b.shared_bytes / 8 * 8},
                                          {b.priv, b.words_offset, VkDeviceSize{b.count} * 8},
                                          {b.priv, b.index_offset, VkDeviceSize{b.count} * 4}};
  VkWriteDescriptorSet w[3]{};
  for (std::uint32_t i = 0; i < 3; ++i) {
    w[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    w[i].dstSet = s->set_;
    w[i].dstBinding = i;
    w[i].descriptorCount = 1;
    w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w[i].pBufferInfo = &info[i];
  }
  f.vkUpdateDescriptorSets(dev, 3, w, 0, nullptr);
  return s;
}

SweepShader::~SweepShader() {
  const VkDevice dev = device_.handle();
  if (pool_ != VK_NULL_HANDLE) fn_.vkDestroyDescriptorPool(dev, pool_, nullptr);  // frees the set
  if (pipeline_ != VK_NULL_HANDLE) fn_.vkDestroyPipeline(dev, pipeline_, nullptr);
  if (layout_ != VK_NULL_HANDLE) fn_.vkDestroyPipelineLayout(dev, layout_, nullptr);
  if (set_layout_ != VK_NULL_HANDLE) fn_.vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
  if (shader_ != VK_NULL_HANDLE) fn_.vkDestroyShaderModule(dev, shader_, nullptr);
}

void SweepShader::record(VkCommandBuffer cmd, bool scatter) const {
  const vk::DeviceFns& d = device_.fn();
  auto barrier = [&](VkPipelineStageFlags from, VkAccessFlags from_access, VkPipelineStageFlags to, VkAccessFlags to_access) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    b.srcAccessMask = from_access;
    b.dstAccessMask = to_access;
    d.vkCmdPipelineBarrier(cmd, from, to, 0, 1, &b, 0, nullptr, 0, nullptr);
  };
  constexpr VkAccessFlags rw = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  barrier(VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
  fn_.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  fn_.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set_, 0, nullptr);
  const Params p{count_, scatter ? 1u : 0u};
  fn_.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p, &p);
  fn_.vkCmdDispatch(cmd, std::clamp<std::uint32_t>((count_ + kLocalSize - 1) / kLocalSize, 1, kMaxGroups), 1, 1);
  barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
          VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | rw);
}

}  // namespace extmem::probe
