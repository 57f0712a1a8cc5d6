// `extmem scan` and `extmem walk`: option parsing only; the work is in extmem::memtools.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "extmem/memtools/commands.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/scan_commands.h"
#include "extmem/os/file.h"

namespace extmem::cli {
namespace {

Runner add_scan(CLI::App& app);
Runner add_walk(CLI::App& app);
const Registration registered_scan{add_scan};
const Registration registered_walk{add_walk};

int usage(const char* command, const std::string& message) {
  std::cerr << "extmem " << command << ": " << message << '\n';
  return memtools::kExitUsage;
}

// The scan options as given, kept by the command's runner.
struct ScanState {
  std::string file, pid, match, hex, page_offset, page_size = "4K", u16, u32, u64, record, order = "little",
                                                                               context = "0", ram_map, max = "0", entropy, block;
  bool twins = false;
  bool json = false;
  CLI::App* cmd = nullptr;
  bool given(const char* name) const { return cmd->get_option(name)->count() > 0; }
};

constexpr const char* kScan = "scan";

void define_scan_options(CLI::App* cmd, ScanState& s) {
  cmd->add_option("FILE", s.file, "File to search (memory-mapped, read front to back)");
  cmd->add_option("--pid", s.pid, "Search this process's readable mappings instead (through /proc/PID/mem)");
  cmd->add_option("--match", s.match, "With --pid: only mappings matching SPEC (docs/memtools.md)");
  cmd->add_option("--hex", s.hex, "Byte pattern: hex digit pairs, e.g. 6c696174 or \"6c 69 61 74\"");
  cmd->add_option("--page-offset", s.page_offset, "With --hex: only at this offset within each page");
  cmd->add_option("--page-size", s.page_size, "Page size for --page-offset (a power of two)")->capture_default_str();
  cmd->add_option("--u16", s.u16, "A 16-bit value at 2-byte alignment");
  cmd->add_option("--u32", s.u32, "A 32-bit value at 4-byte alignment (e.g. 0x7461696c)");
  cmd->add_option("--u64", s.u64, "A 64-bit value at 8-byte alignment");
  cmd->add_option("--record", s.record,
                  "Record template, e.g. 'va@-0x18:u64 size@-0x10:u64 zero@-0x8:u64=0 marker@0:u32=0x7461696c'");
  cmd->add_option("--byte-order", s.order, "Of --u16/--u32/--u64 and template fields: little or big")
      ->capture_default_str();
  cmd->add_option("--context", s.context, "With --u16/--u32/--u64: words shown on each side of a hit (0-64)")
      ->capture_default_str();
  cmd->add_option("--entropy", s.entropy,
                  "Blocks whose byte entropy is at least BITS per byte: BITS[/BLOCK] (block default 32 bytes), e.g. 4.5");
  cmd->add_flag("--twins", s.twins, "Blocks (pages by default) with identical content at different offsets; "
                                    "zero and constant blocks left out");
  cmd->add_option("--block", s.block, "With --twins: block size, a power of two from 64 to 1G (default 4K)");
  cmd->add_option("--ram-map", s.ram_map, "With FILE: print guest-physical addresses, GPA:FILEOFF:SIZE[,...]");
  cmd->add_option("--max", s.max, "Stop after this many hits (0: no limit); with --twins: after this many distinct "
                                  "blocks are held (a memory bound)")
      ->capture_default_str();
  cmd->add_flag("--json", s.json, "One JSON object per hit (JSON lines)");
}

// Each parse_scan_* below fills its part of the options and returns nothing,
// or the exit status of a refusal it has said.

// What is searched: a FILE, or --pid with an optional --match.
std::optional<int> parse_scan_target(const ScanState& s, memtools::ScanOptions& o, memtools::SyntaxError& bad) {
  const bool has_pid = s.given("--pid");
  if (s.file.empty() == !has_pid)
    return usage(kScan, "give a FILE or --pid=PID (one of them)");
  if (has_pid) {
    auto p = memtools::parse_pid(s.pid, &bad);
    if (!p) return memtools::print_syntax_error(std::cerr, kScan, "--pid", bad);
    o.pid = *p;
  }
  o.file = s.file;
  if (s.given("--match")) {
    if (!has_pid) return usage(kScan, "--match goes with --pid (it selects mappings of a process)");
    auto spec = memtools::MapSpec::parse(s.match, &bad);
    if (!spec) return memtools::print_syntax_error(std::cerr, kScan, "--match", bad);
    o.match = std::move(*spec);
  }
  return std::nullopt;
}

// The block searches, --entropy and --twins, which take none of the word options.
std::optional<int> parse_scan_blocks(const ScanState& s, memtools::ScanOptions& o, memtools::SyntaxError& bad) {
  const char* which = s.twins ? "--twins" : "--entropy";  // a FILE or --pid [--match]
  for (const char* other : {"--page-offset", "--page-size", "--context", "--byte-order"})
    if (s.given(other)) return usage(kScan, std::string(other) + " does not go with " + which);
  if (s.given("--entropy")) {
    auto e = memtools::parse_entropy(s.entropy, &bad);
    if (!e) return memtools::print_syntax_error(std::cerr, kScan, "--entropy", bad);
    o.entropy = *e;
    return std::nullopt;
  }
  memtools::TwinQuery t;
  if (s.given("--block")) {
    auto b = memtools::parse_number(s.block, memtools::NumberStyle::quantity, "block size", &bad);
    if (!b) return memtools::print_syntax_error(std::cerr, kScan, "--block", bad);
    if (*b < 64 || (*b & (*b - 1)) != 0 || *b > (std::uint64_t{1} << 30))
      return usage(kScan, "--block: \"" + s.block + "\" is not accepted: a power of two from 64 to 1G (bytes; K/M/G allowed)");
    t.block = static_cast<std::size_t>(*b);
  }
  o.twins = t;
  return std::nullopt;
}

// What --hex, --record or --u16/--u32/--u64 look for, with --byte-order and --context.
std::optional<int> parse_scan_needle(const ScanState& s, memtools::ScanQuery& q, memtools::SyntaxError& bad) {
  auto order = memtools::parse_byte_order(s.order, &bad);
  if (!order) return memtools::print_syntax_error(std::cerr, kScan, "--byte-order", bad);
  q.order = *order;
  if (s.given("--hex")) {
    auto pattern = memtools::parse_hex_pattern(s.hex, &bad);
    if (!pattern) return memtools::print_syntax_error(std::cerr, kScan, "--hex", bad);
    q.kind = memtools::ScanQuery::Kind::bytes;
    q.pattern = std::move(*pattern);
  } else if (s.given("--record")) {
    auto t = memtools::RecordTemplate::parse(s.record, q.order, &bad);
    if (!t) return memtools::print_syntax_error(std::cerr, kScan, "--record", bad);
    q.kind = memtools::ScanQuery::Kind::record;
    q.record = std::move(*t);
  } else {
    const std::string& text = s.given("--u16") ? s.u16 : s.given("--u32") ? s.u32 : s.u64;
    const char* option = s.given("--u16") ? "--u16" : s.given("--u32") ? "--u32" : "--u64";
    q.kind = memtools::ScanQuery::Kind::value;
    q.width = s.given("--u16") ? 2 : s.given("--u32") ? 4 : 8;
    auto v = memtools::parse_word_value(text, q.width, "value", &bad);
    if (!v) return memtools::print_syntax_error(std::cerr, kScan, option, bad);
    q.value = *v;
  }
  if (s.given("--context")) {
    if (q.kind != memtools::ScanQuery::Kind::value) return usage(kScan, "--context goes with --u16, --u32 or --u64");
    auto n = memtools::parse_number(s.context, memtools::NumberStyle::value, "context", &bad);
    if (!n) return memtools::print_syntax_error(std::cerr, kScan, "--context", bad);
    if (*n > 64) return usage(kScan, "--context: at most 64 words on each side");
    q.context = static_cast<unsigned>(*n);
  }
  if (s.given("--byte-order") && q.kind == memtools::ScanQuery::Kind::bytes)
    return usage(kScan, "--byte-order goes with --u16, --u32, --u64 or --record (a --hex pattern is bytes in the order written)");
  return std::nullopt;
}

// --page-offset and --page-size, which go with --hex.
std::optional<int> parse_scan_page(const ScanState& s, memtools::ScanQuery& q, memtools::SyntaxError& bad) {
  auto page_size = memtools::parse_number(s.page_size, memtools::NumberStyle::quantity, "page size", &bad);
  if (!page_size) return memtools::print_syntax_error(std::cerr, kScan, "--page-size", bad);
  if (*page_size < 16 || (*page_size & (*page_size - 1)) != 0 || *page_size > (std::uint64_t{1} << 30))
    return usage(kScan, "--page-size: \"" + s.page_size + "\" is not accepted: a power of two from 16 to 1G (bytes; K/M/G allowed)");
  q.page_size = *page_size;
  if (s.given("--page-size") && !s.given("--page-offset"))
    return usage(kScan, "--page-size goes with --page-offset (it is the page that offset counts in)");
  if (s.given("--page-offset")) {
    if (q.kind != memtools::ScanQuery::Kind::bytes) return usage(kScan, "--page-offset goes with --hex");
    auto off = memtools::parse_number(s.page_offset, memtools::NumberStyle::quantity, "page offset", &bad);
    if (!off) return memtools::print_syntax_error(std::cerr, kScan, "--page-offset", bad);
    if (*off >= q.page_size)
      return usage(kScan, "--page-offset: must be below the page size (" + memtools::format_size(q.page_size) + ")");
    q.page_offset = *off;
  }
  return std::nullopt;
}

// The options every search form shares (--ram-map, --max, --json), then the search.
int finish_scan(const ScanState& s, memtools::ScanOptions& o, memtools::SyntaxError& bad) {
  if (s.given("--ram-map")) {
    if (s.given("--pid")) return usage(kScan, "--ram-map goes with a FILE (a process has virtual addresses)");
    auto map = memtools::RamMap::parse(s.ram_map, &bad);
    if (!map) return memtools::print_syntax_error(std::cerr, kScan, "--ram-map", bad);
    o.ram_map = std::move(*map);
  }
  auto max = memtools::parse_number(s.max, memtools::NumberStyle::value, "max", &bad);
  if (!max) return memtools::print_syntax_error(std::cerr, kScan, "--max", bad);
  o.query.max_hits = *max;
  if (o.twins) o.twins->max_distinct = *max;
  o.json = s.json;
  return memtools::run_scan(o, std::cout, std::cerr);
}

Runner add_scan(CLI::App& app) {
  auto s = std::make_shared<ScanState>();
  CLI::App* cmd = app.add_subcommand(
      "scan", "Search a file (e.g. a RAM image) or a process's memory for bytes, an integer value or a record");
  s->cmd = cmd;
  define_scan_options(cmd, *s);
  return [s]() -> int {
    memtools::ScanOptions o;
    memtools::SyntaxError bad;
    if (auto refused = parse_scan_target(*s, o, bad)) return *refused;
    const int kinds = s->given("--hex") + s->given("--u16") + s->given("--u32") + s->given("--u64") +
                      s->given("--record") + s->given("--entropy") + s->twins;
    if (kinds != 1) return usage(kScan, "give exactly one of --hex, --u16, --u32, --u64, --record, --entropy, --twins");
    if (s->given("--block") && !s->twins) return usage(kScan, "--block goes with --twins (--entropy takes BITS/BLOCK)");
    if (s->given("--entropy") || s->twins) {
      if (auto refused = parse_scan_blocks(*s, o, bad)) return *refused;
    } else {
      if (auto refused = parse_scan_needle(*s, o.query, bad)) return *refused;
      if (auto refused = parse_scan_page(*s, o.query, bad)) return *refused;
    }
    return finish_scan(*s, o, bad);
  };
}

Runner add_walk(CLI::App& app) {
  struct State {
    std::string image, ram_map, root, format;
    std::vector<std::string> addresses;
    bool all_chains = false, json = false;
    CLI::App* cmd = nullptr;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand("walk", "Translate virtual addresses by walking page tables in a RAM image");
  s->cmd = cmd;
  cmd->add_option("--image", s->image, "The RAM image file")->required();
  cmd->add_option("--ram-map", s->ram_map, "GPA:FILEOFF:SIZE[,...]: where physical addresses are in the file "
                                           "(default: physical address = file offset)");
  cmd->add_option("--root", s->root,
                  "Physical address of the root table, hex (0x optional; 0n for decimal); a CR3 value as printed "
                  "(its PCID/flag bits are dropped with a note)")
      ->required();
  cmd->add_option("--format", s->format, "x86-64, x86-64-la57, gmmu, or FILE.json (docs/memtools.md, \"Formats\")")
      ->required();
  cmd->add_flag("--all-chains", s->all_chains, "Walk both halves of dual (big/small) entries, not the first valid one");
  cmd->add_flag("--json", s->json, "One JSON object per VA");
  cmd->add_option("VA", s->addresses, "Virtual addresses (hex)")->required();
  return [s]() -> int {
    const char* c = "walk";
    memtools::WalkOptions o;
    memtools::SyntaxError bad;
    o.image = s->image;
    if (s->cmd->get_option("--ram-map")->count() > 0) {
      auto map = memtools::RamMap::parse(s->ram_map, &bad);
      if (!map) return memtools::print_syntax_error(std::cerr, c, "--ram-map", bad);
      o.ram_map = std::move(*map);
    }
    // An address like every other (hex by default, as QEMU's "info registers" prints CR3).
    auto root = memtools::parse_number(s->root, memtools::NumberStyle::address, "root", &bad);
    if (!root) return memtools::print_syntax_error(std::cerr, c, "--root", bad);
    o.root = *root;
    if (auto builtin = memtools::WalkFormat::builtin(s->format)) {
      o.format = std::move(*builtin);
    } else {
      // A format file is some KiB of JSON.
      auto text = os::read_input_file(s->format, 1u << 20);
      if (!text) {
        std::cerr << "extmem walk: --format: \"" << s->format
                  << "\" is neither a built-in format (x86-64, x86-64-la57, gmmu) nor a readable JSON file ("
                  << text.error().message() << ")\n";
        return memtools::kExitUsage;
      }
      auto f = memtools::WalkFormat::from_json(*text, &bad);
      if (!f) {
        if (!bad.subject.empty()) return memtools::print_syntax_error(std::cerr, c, "--format", bad);
        std::cerr << "extmem walk: bad --format " << s->format << ": " << f.error().detail << '\n';
        return memtools::kExitUsage;
      }
      o.format = std::move(*f);
    }
    for (const std::string& text : s->addresses) {
      auto va = memtools::parse_number(text, memtools::NumberStyle::address, "virtual address", &bad);
      if (!va) return memtools::print_syntax_error(std::cerr, c, "", bad);
      o.addresses.push_back(*va);
    }
    o.all_chains = s->all_chains;
    o.json = s->json;
    return memtools::run_walk(o, std::cout, std::cerr);
  };
}

}  // namespace
}  // namespace extmem::cli
