#include "extmem/memtools/walk_format.h"

#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "memtools/scan.h"

namespace extmem::memtools {
namespace detail {
extern const std::string_view kX86_64FormatJson;
extern const std::string_view kX86_64La57FormatJson;
extern const std::string_view kGmmuFormatJson;
}  // namespace detail

namespace {

using nlohmann::json;

constexpr std::size_t kMaxLevels = 16;
constexpr std::size_t kMaxParts = 4;
constexpr std::string_view kFormatHelp =
    "a JSON object with name, va_bits, root and levels (docs/memtools.md, \"Formats\"; "
    "docs/walk-formats/*.json are examples)";

// A problem at a JSON path, thrown inside the loader only and turned into an Error.
struct FormatProblem {
  std::string path, problem;
};
[[noreturn]] void problem(const std::string& path, std::string what) { throw FormatProblem{path, std::move(what)}; }

void only_keys(const json& j, const std::string& path, const std::vector<std::string_view>& keys) {
  if (!j.is_object()) problem(path, "expected a JSON object");
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (std::string_view key : keys) known = known || key == k;
    if (!known) {
      std::string list;
      for (std::string_view key : keys) list += (list.empty() ? "" : ", ") + std::string(key);
      problem(path + "/" + k, fmt::format("unknown key \"{}\"; accepted here: {}", k, list));
    }
  }
}

// `path` by value as a view: a std::string temporary bound to a reference
// parameter of a function returning a reference is what GCC 13+ reads as a
// possibly dangling result (-Wdangling-reference); the result refers into `j` alone.
const json& required(const json& j, std::string_view path, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) problem(std::string(path), fmt::format("missing key \"{}\"", key));
  return *it;
}

// An unsigned integer: a JSON number or a string of decimal or 0x-hex digits.
std::uint64_t number(const json& j, const std::string& path, std::uint64_t max) {
  std::uint64_t v = 0;
  if (j.is_number_unsigned()) {
    v = j.get<std::uint64_t>();
  } else if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    auto parsed = parse_number(s, NumberStyle::value);
    if (!parsed) problem(path, fmt::format("\"{}\" is not a number (decimal or 0x-hex)", s));
    v = *parsed;
  } else {
    problem(path, "expected a non-negative integer or a string of one (\"0x80\")");
  }
  if (v > max) problem(path, fmt::format("{} is larger than {}", v, max));
  return v;
}

unsigned small(const json& j, const std::string& path, const char* key, unsigned max) {
  return static_cast<unsigned>(number(required(j, path, key), path + "/" + key, max));
}

EntryTest entry_test(const json& j, const std::string& path) {
  only_keys(j, path, {"mask", "value"});
  EntryTest t;
  t.mask = number(required(j, path, "mask"), path + "/mask", ~std::uint64_t{0});
  if (t.mask == 0) problem(path + "/mask", "a mask of 0 tests nothing");
  if (auto it = j.find("value"); it != j.end()) {
    t.value = number(*it, path + "/value", ~std::uint64_t{0});
    if ((*t.value & ~t.mask) != 0) problem(path + "/value", "has bits outside the mask: it can never match");
  }
  return t;
}

AddressField address_field(const json& j, const std::string& path, unsigned word_bits) {
  only_keys(j, path, {"low", "high", "shift"});
  AddressField a;
  a.low = small(j, path, "low", word_bits - 1);
  a.high = small(j, path, "high", word_bits - 1);
  a.shift = small(j, path, "shift", 63);
  if (a.high < a.low) problem(path + "/high", fmt::format("high bit {} is below low bit {}", a.high, a.low));
  return a;
}

// The keys of a part (also allowed on a level that has no "parts").
const std::vector<std::string_view> kPartKeys = {
    "name", "offset", "bytes", "valid", "leaf_if", "address", "leaf_address", "next", "aperture", "aperture_names"};

EntryPart entry_part(const json& j, const std::string& path, unsigned entry_bytes, std::vector<std::string>& nexts) {
  EntryPart p;
  if (auto it = j.find("name"); it != j.end()) {
    if (!it->is_string()) problem(path + "/name", "expected a string");
    p.name = it->get<std::string>();
  }
  p.offset = j.contains("offset") ? small(j, path, "offset", 64) : 0;
  p.bytes = j.contains("bytes") ? small(j, path, "bytes", 8) : std::min(entry_bytes, 8u);
  if (p.bytes != 4 && p.bytes != 8) problem(path + "/bytes", "a part is a 4- or 8-byte word");
  if (p.offset % p.bytes != 0 || p.offset + p.bytes > entry_bytes)
    problem(path + "/offset", fmt::format("a {}-byte word at byte {} does not lie aligned in a {}-byte entry",
                                          p.bytes, p.offset, entry_bytes));
  const unsigned word_bits = 8 * p.bytes;
  p.valid = entry_test(required(j, path, "valid"), path + "/valid");
  p.address = address_field(required(j, path, "address"), path + "/address", word_bits);
  if (auto it = j.find("leaf_if"); it != j.end()) p.leaf_if = entry_test(*it, path + "/leaf_if");
  if (auto it = j.find("leaf_address"); it != j.end())
    p.leaf_address = address_field(*it, path + "/leaf_address", word_bits);
  if (auto it = j.find("aperture"); it != j.end()) p.aperture = address_field(*it, path + "/aperture", word_bits);
  if (auto it = j.find("aperture_names"); it != j.end()) {
    if (!p.aperture) problem(path + "/aperture_names", "names without an \"aperture\" field");
    if (!it->is_array() || it->size() > 64) problem(path + "/aperture_names", "expected an array of at most 64 strings");
    for (const json& n : *it) {
      if (!n.is_string()) problem(path + "/aperture_names", "expected strings");
      p.aperture_names.push_back(n.get<std::string>());
    }
  }
  if (auto it = j.find("next"); it != j.end()) {
    if (!it->is_string()) problem(path + "/next", "expected a level name");
    nexts.push_back(it->get<std::string>());
  } else {
    nexts.emplace_back();
    if (p.leaf_if) problem(path + "/leaf_if", "a part without \"next\" is always a leaf");
    if (p.leaf_address) problem(path + "/leaf_address", "only with \"leaf_if\" (a leaf's address is \"address\")");
  }
  if (p.leaf_address && !p.leaf_if) problem(path + "/leaf_address", "only with \"leaf_if\"");
  return p;
}

// The keys of the format itself: its name, description, address bits and byte order.
void load_format_keys(const json& doc, WalkFormat& f) {
  const json& name = required(doc, "", "name");
  if (!name.is_string() || name.get_ref<const std::string&>().empty()) problem("/name", "expected a non-empty string");
  f.name = name.get<std::string>();
  if (auto it = doc.find("description"); it != doc.end()) {
    if (!it->is_string()) problem("/description", "expected a string");
    f.description = it->get<std::string>();
  }
  f.va_bits = small(doc, "", "va_bits", 64);
  if (f.va_bits < 12) problem("/va_bits", "fewer than 12 bits");
  if (auto it = doc.find("sign_extended"); it != doc.end()) {
    if (!it->is_boolean()) problem("/sign_extended", "expected true or false");
    f.sign_extended = it->get<bool>();
  }
  if (auto it = doc.find("root_flags"); it != doc.end()) f.root_flags = number(*it, "/root_flags", ~std::uint64_t{0});
  if (auto it = doc.find("root_hint"); it != doc.end()) {
    if (!it->is_string()) problem("/root_hint", "expected a string");
    f.root_hint = it->get<std::string>();
  }
  if (auto it = doc.find("byte_order"); it != doc.end()) {
    auto order = it->is_string() ? parse_byte_order(it->get<std::string>()) : Result<ByteOrder>(Error{});
    if (!it->is_string() || !order) problem("/byte_order", "expected \"little\" or \"big\"");
    f.order = *order;
  }
}

// A level without "parts" is one part itself: it takes a part's keys too.
void only_level_keys(const json& l, const std::string& path, bool has_parts) {
  if (has_parts) {
    only_keys(l, path, {"name", "shift", "index_bits", "entry_bytes", "parts"});
    return;
  }
  std::vector<std::string_view> keys = {"shift", "index_bits", "entry_bytes"};
  keys.insert(keys.end(), kPartKeys.begin(), kPartKeys.end());
  for (const auto& [k, v] : l.items()) {
    bool known = false;
    for (std::string_view key : keys) known = known || key == k;
    if (!known)
      problem(path + "/" + k, fmt::format("unknown key \"{}\" in a level (shift, index_bits, entry_bytes, parts, "
                                          "or the keys of a part)", k));
  }
}

// The level at `path`, its parts' "next" names (empty: a leaf) in `nexts`;
// `earlier` are the levels before it (names are unique).
WalkLevel load_level(const json& l, const std::string& path, const std::vector<WalkLevel>& earlier,
                     std::vector<std::string>& nexts) {
  if (!l.is_object()) problem(path, "expected a JSON object");
  const bool has_parts = l.contains("parts");
  only_level_keys(l, path, has_parts);
  WalkLevel level;
  const json& lname = required(l, path, "name");
  if (!lname.is_string() || lname.get_ref<const std::string&>().empty())
    problem(path + "/name", "expected a non-empty string");
  level.name = lname.get<std::string>();
  for (const WalkLevel& other : earlier)
    if (other.name == level.name) problem(path + "/name", fmt::format("level \"{}\" defined twice", level.name));
  level.shift = small(l, path, "shift", 63);
  level.index_bits = small(l, path, "index_bits", 20);
  if (level.index_bits == 0) problem(path + "/index_bits", "a level indexes at least 1 bit");
  if (level.shift + level.index_bits > 64)
    problem(path + "/index_bits", "shift + index_bits runs past bit 63");
  level.entry_bytes = small(l, path, "entry_bytes", 16);
  if (level.entry_bytes != 4 && level.entry_bytes != 8 && level.entry_bytes != 16)
    problem(path + "/entry_bytes", "entries are 4, 8 or 16 bytes");
  if (has_parts) {
    const json& parts = l["parts"];
    if (!parts.is_array() || parts.empty() || parts.size() > kMaxParts)
      problem(path + "/parts", fmt::format("expected an array of 1 to {} parts", kMaxParts));
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const std::string ppath = fmt::format("{}/parts/{}", path, k);
      only_keys(parts[k], ppath, kPartKeys);
      level.parts.push_back(entry_part(parts[k], ppath, level.entry_bytes, nexts));
    }
  } else {
    level.parts.push_back(entry_part(l, path, level.entry_bytes, nexts));
    level.parts.back().name.clear();
  }
  return level;
}

std::optional<std::size_t> find_level(const WalkFormat& f, const std::string& n) {
  for (std::size_t i = 0; i < f.levels.size(); ++i)
    if (f.levels[i].name == n) return i;
  return std::nullopt;
}

// Resolve names: each `next` must exist and lie strictly below (lower shift,
// its index bits ending at or below this level's shift), so walks end.
void resolve_nexts(WalkFormat& f, const json& levels, const std::vector<std::vector<std::string>>& next_names) {
  for (std::size_t i = 0; i < f.levels.size(); ++i) {
    for (std::size_t k = 0; k < f.levels[i].parts.size(); ++k) {
      const std::string& n = next_names[i][k];
      if (n.empty()) continue;
      const std::string path = f.levels[i].parts.size() == 1 && !levels[i].contains("parts")
                                   ? fmt::format("/levels/{}/next", i)
                                   : fmt::format("/levels/{}/parts/{}/next", i, k);
      auto target = find_level(f, n);
      if (!target) problem(path, fmt::format("no level is named \"{}\"", n));
      const WalkLevel& to = f.levels[*target];
      if (to.shift + to.index_bits > f.levels[i].shift)
        problem(path, fmt::format("level \"{}\" (bits {}..{}) does not lie below \"{}\" (shift {})", to.name,
                                  to.shift, to.shift + to.index_bits - 1, f.levels[i].name, f.levels[i].shift));
      f.levels[i].parts[k].next = *target;
    }
  }
}

WalkFormat load(const json& doc) {
  only_keys(doc, "",
            {"name", "description", "va_bits", "sign_extended", "byte_order", "root", "root_flags", "root_hint", "levels"});
  WalkFormat f;
  load_format_keys(doc, f);
  const json& levels = required(doc, "", "levels");
  if (!levels.is_array() || levels.empty() || levels.size() > kMaxLevels)
    problem("/levels", fmt::format("expected an array of 1 to {} levels", kMaxLevels));
  std::vector<std::vector<std::string>> next_names;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    std::vector<std::string> nexts;
    WalkLevel level = load_level(levels[i], fmt::format("/levels/{}", i), f.levels, nexts);
    next_names.push_back(std::move(nexts));
    f.levels.push_back(std::move(level));
  }
  resolve_nexts(f, levels, next_names);
  const json& root = required(doc, "", "root");
  if (!root.is_string()) problem("/root", "expected a level name");
  auto r = find_level(f, root.get<std::string>());
  if (!r) problem("/root", fmt::format("no level is named \"{}\"", root.get<std::string>()));
  f.root = *r;
  const WalkLevel& top = f.levels[f.root];
  if (top.shift + top.index_bits < f.va_bits)
    problem("/root", fmt::format("the root level covers bits up to {}, below va_bits {}",
                                 top.shift + top.index_bits - 1, f.va_bits));
  return f;
}

}  // namespace

Result<WalkFormat> WalkFormat::from_json(std::string_view text, SyntaxError* syntax) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // e.byte is 1-based: the position of the character that broke the parse.
    const std::size_t column = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size());
    std::string what = e.what();
    const std::size_t p = what.find("syntax error");  // error-text: display only (nlohmann's prefix cut)
    if (p != std::string::npos) what = what.substr(p);
    return detail::syntax_failure(syntax, "format", text, column, "JSON " + what, kFormatHelp);
  } catch (const json::exception& e) {
    // Not a syntax error but still thrown by parse: a number too large for a
    // double ("7e7777"), found by the fuzzer.
    return Error{"parse format", ErrorKind::invalid_argument, {}, std::string("JSON: ") + e.what()};
  }
  try {
    return load(doc);
  } catch (const FormatProblem& p) {
    return Error{"parse format", ErrorKind::invalid_argument, {},
                 fmt::format("{}: {}", p.path.empty() ? "/" : p.path, p.problem)};
  } catch (const json::exception& e) {
    return Error{"parse format", ErrorKind::invalid_argument, {}, e.what()};
  }
}

std::string_view WalkFormat::builtin_json(std::string_view name) {
  if (name == "x86-64") return detail::kX86_64FormatJson;
  if (name == "x86-64-la57") return detail::kX86_64La57FormatJson;
  if (name == "gmmu") return detail::kGmmuFormatJson;
  return {};
}

std::optional<WalkFormat> WalkFormat::builtin(std::string_view name) {
  const std::string_view text = builtin_json(name);
  if (text.empty()) return std::nullopt;
  auto f = from_json(text);
  if (!f) return std::nullopt;  // cannot happen: a test loads both
  return std::move(*f);
}

std::vector<std::string> WalkFormat::builtin_names() { return {"x86-64", "x86-64-la57", "gmmu"}; }

}  // namespace extmem::memtools
