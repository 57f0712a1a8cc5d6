#include "extmem/watch/mapping_classes.h"

#include <algorithm>
#include <unordered_map>

namespace extmem::watch {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string mapping_class(std::string_view path) {
  constexpr std::string_view deleted = " (deleted)";
  if (path.size() >= deleted.size() && path.substr(path.size() - deleted.size()) == deleted)
    path.remove_suffix(deleted.size());
  if (path.empty() || path == "/dev/zero") return "anon";
  if (path.front() == '[' && path.back() == ']' && path.size() >= 2) {
    const std::string_view inner = path.substr(1, path.size() - 2);
    if (starts_with(inner, "anon:") || starts_with(inner, "anon_shmem:")) return std::string(inner);
    if (inner == "heap") return "heap";
    if (inner == "stack" || starts_with(inner, "stack:")) return "stack";
    if (inner == "vdso" || inner == "vvar" || inner == "vvar_vclock" || inner == "vsyscall") return "vdso";
    return std::string(path);
  }
  if (starts_with(path, "/memfd:")) return std::string(path.substr(1));
  if (starts_with(path, "/dmabuf:") || path == "anon_inode:dmabuf") return "dmabuf";
  if (starts_with(path, "/dev/shm/")) return "shm";
  if (starts_with(path, "/SYSV")) return "sysv-shm";
  if (starts_with(path, "/dev/")) return std::string(path);
  if (starts_with(path, "anon_inode:")) return std::string(path);
  if (path.front() == '/') return "file";
  return "other";
}

MapCensus census_of(std::string_view text) {
  MapCensus out;
  std::unordered_map<std::string, std::uint64_t> counts;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++out.total;
    auto entry = os::parse_maps_line(line);
    ++counts[entry ? mapping_class(entry->path) : std::string("unparsed")];
  }
  out.classes.assign(counts.begin(), counts.end());
  std::sort(out.classes.begin(), out.classes.end());
  return out;
}

}  // namespace extmem::watch
