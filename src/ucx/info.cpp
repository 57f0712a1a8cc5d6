#include "ucx/info.h"

#include <algorithm>
#include <charconv>

namespace extmem::ucx {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == '#' || s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

/// `s` with every run of spaces as one space (UCX pads its columns).
std::string squeezed(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  return out;
}

template <class F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    f(trim(text.substr(0, nl)));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

/// The number in "<prefix>N]" at the start of `s`, advancing `s` past "]:".
bool bracketed(std::string_view& s, std::string_view prefix, unsigned& n) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  std::string_view rest = s.substr(prefix.size());
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  if (ec != std::errc() || end == rest.data() + rest.size() || *end != ']') return false;
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()) + 1);
  if (rest.empty() || rest.front() != ':') return false;
  s = trim(rest.substr(1));
  return true;
}

void add_once(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

EndpointInfo parse_endpoint_info(std::string_view text) {
  EndpointInfo info;
  std::vector<unsigned> rma_lanes;
  for_each_line(text, [&](std::string_view line) {
    std::string_view s = line;
    unsigned n = 0;
    if (bracketed(s, "lane[", n)) {
      // "3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255] am am_bw#0"
      Lane lane{.index = n, .line = squeezed(line)};
      std::size_t colon = s.find(':');
      std::size_t space = s.find(' ');
      std::string_view rsc = s.substr(colon == std::string_view::npos ? 0 : colon + 1,
                                      space == std::string_view::npos ? std::string_view::npos : space - colon - 1);
      std::size_t slash = rsc.find('/');
      lane.transport = std::string(rsc.substr(0, slash));
      if (slash != std::string_view::npos) lane.device = std::string(rsc.substr(slash + 1));
      std::size_t arrow = s.find("->");
      if (arrow != std::string_view::npos) {
        std::string_view uses = s.substr(arrow);
        std::size_t uses_at = uses.find(' ', 3);  // past "-> md[..]/tl/dev"
        if (uses_at != std::string_view::npos) {
          uses = uses.substr(uses_at);
          lane.am = uses.find(" am ") != std::string_view::npos ||
                    (uses.size() >= 3 && uses.substr(uses.size() - 3) == " am");
        }
      }
      info.lanes.push_back(std::move(lane));
      info.raw += (info.raw.empty() ? "" : "; ") + squeezed(line);
    } else if (bracketed(s, "put[", n) || bracketed(s, "get[", n)) {
      rma_lanes.push_back(n);
      info.raw += (info.raw.empty() ? "" : "; ") + squeezed(line);
    }
  });
  for (Lane& lane : info.lanes)
    lane.rma = std::find(rma_lanes.begin(), rma_lanes.end(), lane.index) != rma_lanes.end();
  return info;
}

std::vector<std::string> EndpointInfo::rma_transports() const {
  std::vector<std::string> out;
  bool emulated = rma_emulated();
  for (const Lane& lane : lanes)
    if (emulated ? lane.am : lane.rma) add_once(out, lane.transport);
  return out;
}

bool EndpointInfo::rma_emulated() const {
  return std::none_of(lanes.begin(), lanes.end(), [](const Lane& l) { return l.rma; });
}

std::vector<std::string> context_transports(std::string_view text) {
  std::vector<std::string> out;
  for_each_line(text, [&](std::string_view line) {
    if (line.substr(0, 9) != "resource ") return;
    std::size_t dash = line.find("-- ");
    if (dash == std::string_view::npos) return;
    std::string_view rsc = line.substr(dash + 3);
    add_once(out, std::string(rsc.substr(0, rsc.find('/'))));
  });
  return out;
}

bool is_shared_memory(std::string_view tl) {
  return tl == "posix" || tl == "sysv" || tl == "cma" || tl == "knem" || tl == "xpmem";
}

}  // namespace extmem::ucx
