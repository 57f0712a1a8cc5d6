#include "probe/routes/t3/host_matrix.h"

#include <sys/mman.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "extmem/os/fd.h"
#include "vulkan/dispatch.h"
#include "probe/routes/route_file.h"

namespace extmem::probe {
namespace {
namespace EXTMEM_ROUTE_FILE {

constexpr auto kHost = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;

// The answer of one host-pointer import: the properties query's VkResult, and the
// allocation's (VK_SUCCESS: accepted; the memory was freed again).
struct Answer {
  VkResult props = VK_SUCCESS;
  VkResult import = VK_SUCCESS;
};

Answer import_and_free(const vk::Device& device, void* host, VkDeviceSize bytes) {
  Answer a;
  const vk::DeviceFns& f = device.fn();
  VkMemoryHostPointerPropertiesEXT props{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  a.props = f.vkGetMemoryHostPointerPropertiesEXT(device.handle(), kHost, host, &props);
  // With no answer from the query, any type the device has is offered: the import decides.
  std::uint32_t bits = a.props == VK_SUCCESS && props.memoryTypeBits != 0 ? props.memoryTypeBits : ~0u;
  int type = device.find_memory_type(bits, 0);
  VkImportMemoryHostPointerInfoEXT imp{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  imp.handleType = kHost;
  imp.pHostPointer = host;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = &imp;
  ai.allocationSize = bytes;
  ai.memoryTypeIndex = static_cast<std::uint32_t>(type < 0 ? 0 : type);
  VkDeviceMemory mem = VK_NULL_HANDLE;
  a.import = f.vkAllocateMemory(device.handle(), &ai, nullptr, &mem);
  if (a.import == VK_SUCCESS) f.vkFreeMemory(device.handle(), mem, nullptr);
  return a;
}

std::string answer_text(VkResult r) { return r == VK_SUCCESS ? "accepted" : fmt::format("refused={}", vk::result_name(r)); }

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

void host_size_matrix(ChildContext& ctx, const vk::Device& device, std::size_t alignment, RouteReport& rep) {
  const std::size_t k = (ctx.layout().size + alignment - 1) / alignment;
  const std::size_t full = k * alignment;
  ctx.step("size matrix: aligned anonymous mapping");
  auto map = os::Mapping::map_aligned(-1, full, alignment);
  if (!map) {
    rep.detail.push_back(fmt::format("sizeMatrix: not run ({} -> {})", map.error().step, map.error().code));
    return;
  }
  struct Case {
    std::size_t bytes;
    std::string form;
  };
  std::vector<Case> cases = {{full, "k*align"}, {full - 4096, "k*align-4096"}, {full - 1024, "k*align-1024"}};
  std::vector<std::string> out;
  for (const Case& c : cases) {
    ctx.step(fmt::format("vkAllocateMemory(import HOST_ALLOCATION, allocationSize {} = {})", c.bytes, c.form));
    Answer a = import_and_free(device, map->data(), c.bytes);
    const bool valid = c.bytes % alignment == 0;  // the spec's valid usage for allocationSize
    std::string text = fmt::format("{}({})={}", c.bytes, c.form, answer_text(a.import));
    if (a.props != VK_SUCCESS) text += fmt::format(" props={}", vk::result_name(a.props));
    if (valid && a.import != VK_SUCCESS) text += " (a finding: a valid import refused)";
    if (!valid && a.import == VK_SUCCESS) text += " (a finding: accepted a size off the alignment)";
    out.push_back(text);
  }
  rep.detail.push_back(fmt::format("sizeMatrix(align={}): {}", alignment, fmt::join(out, " ")));
}

void host_invalid_pointers(ChildContext& ctx, const vk::Device& device, std::size_t alignment, RouteReport& rep) {
  ctx.step("invalid pointers: aligned anonymous mapping");
  auto map = os::Mapping::map_aligned(-1, 2 * alignment, alignment);
  if (!map) {
    rep.detail.push_back(fmt::format("invalidPointer: not run ({} -> {})", map.error().step, map.error().code));
    return;
  }
  struct Case {
    std::string name;
    void* ptr;
  };
  std::vector<Case> cases = {{"NULL", nullptr}, {fmt::format("unaligned(+{})", alignment / 2), map->data() + alignment / 2}};
  std::vector<std::string> out;
  for (const Case& c : cases) {
    ctx.step(fmt::format("vkGetMemoryHostPointerPropertiesEXT + vkAllocateMemory(import HOST_ALLOCATION of a {} pointer)", c.name));
    Answer a = import_and_free(device, c.ptr, alignment);
    out.push_back(fmt::format("{} props={} import={} {}", c.name, vk::result_name(a.props), answer_text(a.import),
                              a.import == VK_SUCCESS ? "(a finding: accepted invalid input)" : "(invalid input)"));
  }
  rep.detail.push_back(fmt::format("invalidPointer: {}", fmt::join(out, "; ")));
}

}  // namespace extmem::probe
