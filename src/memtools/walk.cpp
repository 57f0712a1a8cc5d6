#include "extmem/memtools/walk.h"

#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "extmem/memtools/word_access.h"
#include "memtools/image_file.h"

namespace extmem::memtools {
namespace {

// --all-chains forks at every multi-part entry: a format of many dual levels
// would fork exponentially, so a walk stops starting chains past this many.
constexpr std::size_t kMaxChains = 64;

void walk_level(const WalkFormat& f, const PhysicalImage& image, std::size_t level_index, std::uint64_t table,
                std::uint64_t va, bool all_chains, WalkChain chain, std::vector<WalkChain>& out) {
  if (out.size() >= kMaxChains) return;
  const WalkLevel& level = f.levels[level_index];
  const std::uint64_t index = (va >> level.shift) & ((std::uint64_t{1} << level.index_bits) - 1);
  const std::uint64_t entry_address = table + index * level.entry_bytes;
  for (const EntryPart& part : level.parts) {
    WalkStep step;
    step.level = level.name;
    step.part = part.name;
    step.index = index;
    step.index_low = level.shift;
    step.index_high = level.shift + level.index_bits - 1;
    step.table = table;
    step.entry_address = entry_address + part.offset;
    step.file_offset = image.file_offset(step.entry_address);
    auto word = image.read(step.entry_address, part.bytes, f.order);
    if (!word) {
      step.decision = StepDecision::error;
      step.note = word.error().message();
      WalkChain ended = chain;
      ended.steps.push_back(std::move(step));
      ended.error = std::move(word).error();
      out.push_back(std::move(ended));
      return;  // the tables are unreadable here: other parts would be too
    }
    step.entry = *word;
    if (part.aperture) {
      const std::uint64_t a = part.aperture->extract(step.entry);
      step.aperture = a < part.aperture_names.size() ? part.aperture_names[a] : fmt::format("{}", a);
    }
    WalkChain next_chain = chain;
    if (!part.name.empty()) next_chain.label += (next_chain.label.empty() ? "" : "/") + part.name;
    if (!part.valid.holds(step.entry)) {
      step.decision = StepDecision::invalid;
      step.note = part.valid.value ? fmt::format("entry & {:#x} = {:#x}, valid needs {:#x}", part.valid.mask,
                                                 step.entry & part.valid.mask, *part.valid.value)
                                   : fmt::format("entry & {:#x} = 0, valid needs it non-zero", part.valid.mask);
      if (all_chains) {  // this chain ends here; the other parts start their own
        next_chain.steps.push_back(std::move(step));
        out.push_back(std::move(next_chain));
        continue;
      }
      chain.steps.push_back(std::move(step));  // recorded; the next part, if any, is tried
      if (&part == &level.parts.back()) {
        out.push_back(std::move(chain));
        return;
      }
      continue;
    }
    const bool leaf = !part.next || (part.leaf_if && part.leaf_if->holds(step.entry));
    if (leaf) {
      const AddressField& field = part.leaf_if && part.leaf_address && part.next ? *part.leaf_address : part.address;
      const std::uint64_t page_size = std::uint64_t{1} << level.shift;
      const std::uint64_t page = field.extract(step.entry) & ~(page_size - 1);
      step.decision = StepDecision::leaf;
      step.next = page;
      next_chain.steps.push_back(std::move(step));
      next_chain.physical = page | (va & (page_size - 1));
      next_chain.page_size = page_size;
      next_chain.file_offset = image.file_offset(*next_chain.physical);
      out.push_back(std::move(next_chain));
    } else {
      step.decision = StepDecision::table;
      step.next = part.address.extract(step.entry);
      const std::uint64_t next_table = step.next;
      next_chain.steps.push_back(std::move(step));
      walk_level(f, image, *part.next, next_table, va, all_chains, std::move(next_chain), out);
    }
    if (!all_chains) return;
  }
}

}  // namespace

Result<PhysicalImage> PhysicalImage::open(const std::string& path, std::optional<RamMap> ram_map) {
  PhysicalImage image;
  image.path_ = path;
  auto file = detail::open_image(path);
  if (!file) return std::move(file).error();
  image.fd_ = std::move(file->fd);
  image.size_ = file->size;
  if (ram_map) {
    for (const RamRange& r : ram_map->ranges())
      if (r.file_offset > image.size_ || image.size_ - r.file_offset < r.size)
        return word_error("check --ram-map against " + path, ErrorKind::invalid_argument, WordCode::past_end,
                          fmt::format("the file is shorter than the ram-map says: range {:#x}:{:#x}:{:#x} ends at file "
                                      "offset {:#x}, the file has {:#x} bytes",
                                      r.gpa, r.file_offset, r.size, r.file_offset + r.size, image.size_));
  }
  image.ram_map_ = std::move(ram_map);
  return image;
}

std::optional<std::uint64_t> PhysicalImage::file_offset(std::uint64_t pa) const noexcept {
  if (!ram_map_) return pa < size_ ? std::optional(pa) : std::nullopt;
  return ram_map_->to_file_offset(pa);
}

Result<std::uint64_t> PhysicalImage::read(std::uint64_t pa, unsigned width, ByteOrder order) const {
  const std::string step = fmt::format("read PA {:#x}", pa);
  std::uint64_t offset = pa;
  if (ram_map_) {
    const auto first = ram_map_->to_file_offset(pa);
    if (!first) return word_error(step, ErrorKind::invalid_argument, WordCode::not_mapped, "outside every --ram-map range");
    const auto last = pa + (width - 1) < pa ? std::nullopt : ram_map_->to_file_offset(pa + (width - 1));
    if (!last || *last != *first + (width - 1))
      return word_error(step, ErrorKind::invalid_argument, WordCode::crosses_mapping, "the word runs out of its --ram-map range");
    offset = *first;
  }
  if (offset > size_ || size_ - offset < width)
    return word_error(step, ErrorKind::invalid_argument, WordCode::past_end,
                      fmt::format("file offset {:#x} is past the end of {} ({:#x} bytes)", offset, path_, size_));
  std::uint8_t buf[8];
  ssize_t n;
  do {
    n = ::pread(fd_.get(), buf, width, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return os_error("pread " + path_, errno, step);
  if (static_cast<unsigned>(n) != width)
    return word_error(step, ErrorKind::invalid_argument, WordCode::past_end, "the file ended before the word (it shrank?)");
  return decode_word(buf, width, order);
}

const char* to_string(StepDecision d) noexcept {
  switch (d) {
    case StepDecision::table: return "table";
    case StepDecision::leaf: return "leaf";
    case StepDecision::invalid: return "invalid";
    case StepDecision::error: return "error";
  }
  return "?";
}

const WalkChain& WalkResult::primary() const {
  for (const WalkChain& c : chains)
    if (c.physical) return c;
  return chains.front();
}

Result<WalkResult> walk(const WalkFormat& f, const PhysicalImage& image, std::uint64_t root, std::uint64_t va,
                        bool all_chains) {
  const std::string step = fmt::format("walk VA {:#x}", va);
  if (f.va_bits < 64) {
    const std::uint64_t high = va >> (f.va_bits - (f.sign_extended ? 1 : 0));
    const std::uint64_t all_ones = ~std::uint64_t{0} >> (f.va_bits - (f.sign_extended ? 1 : 0));
    const bool ok = high == 0 || (f.sign_extended && high == all_ones);
    if (!ok)
      return word_error(step, ErrorKind::invalid_argument, WordCode::not_mapped,
                        f.sign_extended
                            ? fmt::format("{:#x} is not a canonical {}-bit address of format {} (bits {}..63 must all "
                                          "equal bit {}); the tables cannot map it",
                                          va, f.va_bits, f.name, f.va_bits - 1, f.va_bits - 1)
                            : fmt::format("{:#x} is above the {}-bit range of format {}; the tables cannot map it", va,
                                          f.va_bits, f.name));
  }
  WalkResult result;
  result.va = va;
  walk_level(f, image, f.root, root, va, all_chains, WalkChain{}, result.chains);
  return result;
}

}  // namespace extmem::memtools
