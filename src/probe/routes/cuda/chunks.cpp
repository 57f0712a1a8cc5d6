#include "probe/routes/cuda/chunks.h"

#include <limits>

#include <fmt/format.h>
#include "probe/routes/route_file.h"

namespace extmem::probe::chunks {
namespace {
namespace EXTMEM_ROUTE_FILE {

Error invalid(const char* step, std::string detail) {
  return Error{step, ErrorKind::invalid_argument, {}, std::move(detail)};
}

void fill_offsets(Plan& p) {
  p.offsets.clear();
  p.total = 0;
  for (std::size_t s : p.sizes) {
    p.offsets.push_back(p.total);
    p.total += s;
  }
}

}  // namespace EXTMEM_ROUTE_FILE
using namespace EXTMEM_ROUTE_FILE;
}  // namespace

Result<Plan> plan(std::size_t want, std::size_t granularity, std::size_t count) {
  constexpr const char* kStep = "plan the chunks";
  if (granularity == 0) return invalid(kStep, "granularity 0");
  if (count == 0) return invalid(kStep, "no chunks");
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  if (count > kMax / (count + 1)) return invalid(kStep, fmt::format("{} chunks", count));
  const std::size_t parts = count * (count + 1) / 2;  // 1 + 2 + ... + count units
  if (parts > kMax / granularity) return invalid(kStep, "granularity too large");
  const std::size_t per_unit = parts * granularity;  // bytes the range holds per granule of unit
  const std::size_t granules = want == 0 ? 1 : (want - 1) / per_unit + 1;
  if (granules > kMax / per_unit) return invalid(kStep, fmt::format("{} bytes do not fit", want));
  const std::size_t unit = granules * granularity;
  Plan p;
  for (std::size_t i = 1; i <= count; ++i) p.sizes.push_back(i * unit);
  fill_offsets(p);
  return p;
}

Result<Plan> from_sizes(const std::vector<std::size_t>& sizes, std::size_t granularity, std::size_t want) {
  constexpr const char* kStep = "check the announced chunks";
  if (sizes.empty()) return invalid(kStep, "no chunks");
  if (granularity == 0) return invalid(kStep, "granularity 0");
  Plan p;
  std::size_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0 || sizes[i] % granularity != 0)
      return invalid(kStep, fmt::format("chunk {} of {} bytes is not a multiple of the granularity {}", i, sizes[i],
                                        granularity));
    if (sizes[i] > std::numeric_limits<std::size_t>::max() - total) return invalid(kStep, "total overflows");
    total += sizes[i];
  }
  if (total < want) return invalid(kStep, fmt::format("total {} bytes is less than the size {}", total, want));
  p.sizes = sizes;
  fill_offsets(p);
  return p;
}

std::vector<Window> windows(const Plan& p) {
  std::vector<Window> out;
  for (std::size_t i = 1; i < p.offsets.size(); ++i)
    out.push_back(Window{i, p.offsets[i] - kBoundaryHalf, 2 * kBoundaryHalf});
  return out;
}

std::size_t chunk_of(const Plan& p, std::size_t offset) {
  for (std::size_t i = 0; i < p.sizes.size(); ++i)
    if (offset >= p.offsets[i] && offset - p.offsets[i] < p.sizes[i]) return i;
  return p.sizes.size();
}

}  // namespace extmem::probe::chunks
