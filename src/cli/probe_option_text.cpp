// The command's grammar of the probe's option texts; the words of each refusal
// are the library's table (probe::kOptionWords), which validate() uses too.
#include "cli/probe_option_text.h"

#include <charconv>
#include <chrono>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "extmem/core/duration.h"
#include "extmem/os/endpoint.h"

namespace extmem::cli {
namespace {

Error option_refused(std::string_view option, std::string detail) {
  return Error{std::string(option), ErrorKind::invalid_argument, {}, std::move(detail)};
}

Error text_not_accepted(std::string_view option, const std::string& text) {
  return option_refused(option, fmt::format("\"{}\" is not accepted: {}", text, probe::accepted_words(option)));
}

// Plain decimal digits only: CLI11 and strtoull would wrap "-4096" around to a huge value.
template <typename T>
bool plain_decimal(const std::string& text, T& out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// The value whose word (probe::to_string()) is `text`, among `values`.
template <typename E, std::size_t N>
bool word_of(const std::string& text, const E (&values)[N], E& out) {
  for (E v : values)
    if (text == probe::to_string(v)) {
      out = v;
      return true;
    }
  return false;
}

// "A,B,,C" -> A, B, C appended to `out`; false when no name is left.
bool append_comma_names(const std::string& text, std::vector<std::string>& out) {
  std::size_t before = out.size(), start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out.size() > before;
}

// A number option: plain decimal into `out`, else refused in its words.
template <typename T>
Status number_text(std::string_view name, const std::string& text, T& out) {
  if (!plain_decimal(text, out)) return text_not_accepted(name, text);
  return {};
}

// A duration option in the one grammar (extmem/core/duration.h).
Status duration_text(std::string_view name, const std::string& text, DurationRange range, std::chrono::nanoseconds& out) {
  auto d = parse_duration(text, range);
  if (!d) return option_refused(name, d.error().detail);
  out = *d;
  return {};
}

// A word option: one of `values`' words.
template <typename E, std::size_t N>
Status word_text(std::string_view name, const std::string& text, const E (&values)[N], E& out) {
  if (!word_of(text, values, out)) return text_not_accepted(name, text);
  return {};
}

// A path option: any text but the empty one, which would read as "not given"
// (the run would write no file and say nothing).
Status path_text(std::string_view name, const std::string& text, std::string& out) {
  if (text.empty()) return option_refused(name, fmt::format("the path is empty; accepted: {}", probe::accepted_words(name)));
  out = text;
  return {};
}

// --image-size: WxH, two plain decimal numbers around one 'x'; the ranges are
// validate()'s and, per device, find()'s.
Status image_size_text(std::string_view name, const std::string& text, probe::ProbeOptions& o) {
  const std::size_t x = text.find('x');
  if (x == std::string::npos || !plain_decimal(text.substr(0, x), o.image_width) ||
      !plain_decimal(text.substr(x + 1), o.image_height))
    return text_not_accepted(name, text);
  return {};
}

// --memory-type: auto, all or an index of at most two digits (whether it is
// HOST_VISIBLE is find()'s to say, after phase A).
Status memory_type_text(std::string_view name, const std::string& text, probe::MemoryTypeChoice& out) {
  using Mode = probe::MemoryTypeChoice::Mode;
  if (text == "auto") out = {};
  else if (text == "all") out = {Mode::all, 0};
  else if (std::uint32_t index = 0; text.size() <= 2 && plain_decimal(text, index)) out = {Mode::index, index};
  else return text_not_accepted(name, text);
  return {};
}

// The options whose value is one piece of text to check and keep.
Status text_option(std::string_view name, const std::string& text, probe::ProbeOptions& o, bool& known) {
  known = true;
  if (name == "--json") return path_text(name, text, o.json_path);
  if (name == "--junit") return path_text(name, text, o.junit_path);
  if (name == "--output") return path_text(name, text, o.output_path);
  if (name == "--verdict-file") return path_text(name, text, o.verdict_path);
  if (name == "--expect") return path_text(name, text, o.expect_path);
  if (name == "--prometheus") return path_text(name, text, o.prometheus_path);
  if (name == "--ctrf") return path_text(name, text, o.ctrf_path);
  if (name == "--device") {
    // Empty would read as "not given" and silently pick the default device.
    if (text.empty())
      return option_refused(name, fmt::format("the device is empty; accepted: {}", probe::accepted_words(name)));
    o.device = text;
    return {};
  }
  if (name == "--peer") {
    if (auto e = os::parse_endpoint(text); !e) return option_refused(name, fmt::format("\"{}\": {}", text, e.error().detail));
    o.peer = text;
    return {};
  }
  if (name == "--require" || name == "--require-group") {
    if (!append_comma_names(text, name == "--require" ? o.require : o.require_groups))
      return option_refused(name, fmt::format("\"{}\" names nothing; accepted: {}", text, probe::accepted_words(name)));
    return {};
  }
  known = false;
  return {};
}

}  // namespace

Status parse_probe_option(probe::ProbeOptions& o, std::string_view name, const std::string& text) {
  if (name == "--size") return number_text(name, text, o.size);
  if (name == "--measure-size") return number_text(name, text, o.measure_size);
  if (name == "--measure-repeats") return number_text(name, text, o.measure_repeats);
  if (name == "--jobs") return number_text(name, text, o.jobs);
  if (name == "--timeout") return duration_text(name, text, probe::kTimeoutRange, o.timeout);
  if (name == "--soak") return duration_text(name, text, probe::kSoakRange, o.soak);
  if (name == "--isolate") return word_text(name, text, probe::kIsolationValues, o.isolate);
  if (name == "--gl-driver") return word_text(name, text, probe::kGlDriverValues, o.gl_driver);
  if (name == "--fd-transport") return word_text(name, text, probe::kFdTransportValues, o.fd_transport);
  if (name == "--expect-transport") return word_text(name, text, probe::kExpectedTransportValues, o.expect_transport);
  if (name == "--image-size") return image_size_text(name, text, o);
  if (name == "--memory-type") return memory_type_text(name, text, o.memory_type);
  bool known = false;
  if (Status s = text_option(name, text, o, known); known) return s;
  return option_refused(name, "not an option of extmem probe that takes a value");
}

}  // namespace extmem::cli
