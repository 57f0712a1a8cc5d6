#include "reclaim/vk_painter.h"

#include <fmt/format.h>

#include "reclaim/paint_band_spv.h"  // generated at build time from paint_band.comp

namespace extmem::reclaim::vkr {

namespace {
constexpr std::uint32_t kSetsPerPool = 256;
constexpr std::uint32_t kLocalSize = 64;  // local_size_x in paint_band.comp
}  // namespace

Result<std::unique_ptr<Painter>> Painter::create(const vk::Device& device, const Fns& fns, QueueTracker& tracker,
                                                 MemoKeying keying, VkBuffer output, VkDeviceSize output_bytes) {
  std::unique_ptr<Painter> p(new Painter(device, fns, tracker, keying));
  p->output_ = output;
  p->output_bytes_ = output_bytes;
  VkDevice dev = device.handle();

  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smci.codeSize = sizeof(kPaintBandSpirv);
  smci.pCode = kPaintBandSpirv;
  VkResult r = fns.vkCreateShaderModule(dev, &smci, nullptr, &p->shader_);
  if (r != VK_SUCCESS) return vk::vk_error("vkCreateShaderModule(paint_band)", r);

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
  r = fns.vkCreateDescriptorSetLayout(dev, &dslci, nullptr, &p->set_layout_);
  if (r != VK_SUCCESS) return vk::vk_error("vkCreateDescriptorSetLayout", r);

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, 2 * sizeof(std::uint32_t)};
  VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &p->set_layout_;
  plci.pushConstantRangeCount = 1;
  plci.pPushConstantRanges = &push;
  r = fns.vkCreatePipelineLayout(dev, &plci, nullptr, &p->layout_);
  if (r != VK_SUCCESS) return vk::vk_error("vkCreatePipelineLayout", r);

  VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = p->shader_;
  cpci.stage.pName = "main";
  cpci.layout = p->layout_;
  r = fns.vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, nullptr, &p->pipeline_);
  if (r != VK_SUCCESS) return vk::vk_error("vkCreateComputePipelines(paint_band)", r);
  return p;
}

Painter::~Painter() {
  VkDevice dev = device_.handle();
  // Destroying a pool frees its sets; memo entries and retired sets need nothing more.
  for (const Pool& pool : pools_) fns_.vkDestroyDescriptorPool(dev, pool.pool, nullptr);
  if (pipeline_ != VK_NULL_HANDLE) fns_.vkDestroyPipeline(dev, pipeline_, nullptr);
  if (layout_ != VK_NULL_HANDLE) fns_.vkDestroyPipelineLayout(dev, layout_, nullptr);
  if (set_layout_ != VK_NULL_HANDLE) fns_.vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
  if (shader_ != VK_NULL_HANDLE) fns_.vkDestroyShaderModule(dev, shader_, nullptr);
}

void Painter::retire(SetRef ref) {
  // The open recording (or an earlier one) may still use the set: free it once
  // the sync point's submission has retired.
  retired_.push_back(Retired{tracker_.sync_point(), ref});
}

void Painter::free_retired() {
  const SubmitIndex done = tracker_.completed();
  while (!retired_.empty() && retired_.front().index <= done) {
    SetRef ref = retired_.front().ref;
    retired_.pop_front();
    fns_.vkFreeDescriptorSets(device_.handle(), pools_[ref.pool].pool, 1, &ref.set);
    ++pools_[ref.pool].free_sets;
  }
}

Result<SetRef> Painter::allocate() {
  free_retired();
  std::uint32_t pool_index = 0;
  while (pool_index < pools_.size() && pools_[pool_index].free_sets == 0) ++pool_index;
  if (pool_index == pools_.size()) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * kSetsPerPool};
    VkDescriptorPoolCreateInfo dpci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpci.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
    dpci.maxSets = kSetsPerPool;
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &size;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkResult r = fns_.vkCreateDescriptorPool(device_.handle(), &dpci, nullptr, &pool);
    if (r != VK_SUCCESS) return vk::vk_error("vkCreateDescriptorPool", r, fmt::format("pool {}", pools_.size()));
    pools_.push_back(Pool{pool, kSetsPerPool});
  }
  VkDescriptorSetAllocateInfo dsai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dsai.descriptorPool = pools_[pool_index].pool;
  dsai.descriptorSetCount = 1;
  dsai.pSetLayouts = &set_layout_;
  SetRef ref{VK_NULL_HANDLE, pool_index};
  VkResult r = fns_.vkAllocateDescriptorSets(device_.handle(), &dsai, &ref.set);
  if (r != VK_SUCCESS) return vk::vk_error("vkAllocateDescriptorSets", r, fmt::format("pool {}", pool_index));
  --pools_[pool_index].free_sets;
  ++sets_made_;
  return ref;
}

Status Painter::record(VkBuffer store, std::uint64_t handle, VkDeviceSize range, std::uint64_t epoch,
                       std::uint32_t first, std::uint32_t count) {
  auto cmd = tracker_.recording();
  if (!cmd) return std::move(cmd).error();
  const auto retire_fn = [this](SetRef ref) { retire(ref); };
  std::optional<SetRef> set = memo_.find(handle, 0, range, epoch, retire_fn);
  if (!set) {
    auto made = allocate();
    if (!made) return std::move(made).error();
    VkDescriptorBufferInfo infos[2] = {{store, 0, range}, {output_, 0, output_bytes_}};
    VkWriteDescriptorSet writes[2]{};
    for (std::uint32_t i = 0; i < 2; ++i) {
      writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[i].dstSet = made->set;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    fns_.vkUpdateDescriptorSets(device_.handle(), 2, writes, 0, nullptr);
    memo_.insert(handle, 0, range, *made, retire_fn);
    set = *made;
  }
  if (bound_in_recording_ != tracker_.recordings_begun()) {
    fns_.vkCmdBindPipeline(*cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
    bound_in_recording_ = tracker_.recordings_begun();
  }
  fns_.vkCmdBindDescriptorSets(*cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set->set, 0, nullptr);
  const std::uint32_t band[2] = {first, count};
  fns_.vkCmdPushConstants(*cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof band, band);
  fns_.vkCmdDispatch(*cmd, (count + kLocalSize - 1) / kLocalSize, 1, 1);
  return {};
}

}  // namespace extmem::reclaim::vkr
