#include "extmem/memtools/scan_commands.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <ostream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/memtools/commands.h"
#include "extmem/memtools/walk.h"
#include "extmem/memtools/word_access.h"
#include "memtools/hex_text.h"

namespace extmem::memtools {
namespace {

int report_failure(std::ostream& err, std::string_view command, const Error& e) {
  err << "extmem " << command << ": " << e.message() << '\n';
  return exit_code_for(e);
}

// Where a hit is: "offset=0x... gpa=0x..." or "va=0x...".
void place_text(const ScanOptions& o, const ScanHit& h, std::string& line) {
  if (!o.file.empty()) {
    line += fmt::format("offset={:#x}", h.address);
    if (o.ram_map) {
      const auto gpa = o.ram_map->to_gpa(h.address);
      line += gpa ? fmt::format(" gpa={:#x}", *gpa) : " gpa=none";
    }
  } else {
    line += fmt::format("va={:#x}", h.address);
  }
}

void place_json(const ScanOptions& o, const ScanHit& h, nlohmann::json& j) {
  if (!o.file.empty()) {
    j["offset"] = hex(h.address);
    if (o.ram_map) {
      const auto gpa = o.ram_map->to_gpa(h.address);
      j["gpa"] = gpa ? nlohmann::json(hex(*gpa)) : nlohmann::json(nullptr);
    }
  } else {
    j["va"] = hex(h.address);
  }
}

std::string hit_text(const ScanOptions& o, const ScanHit& h) {
  const ScanQuery& q = o.query;
  std::string line;
  place_text(o, h, line);
  switch (q.kind) {
    case ScanQuery::Kind::bytes: break;
    case ScanQuery::Kind::value: {
      line += fmt::format(" u{}={}", 8 * q.width, word_hex(h.fields.at(0), q.width));
      if (q.context > 0) {
        line += " context";
        auto word = [&](const std::optional<std::uint64_t>& w) { return w ? word_hex(*w, q.width) : std::string("none"); };
        for (std::size_t i = 0; i < h.before.size(); ++i)
          line += fmt::format(" -{:#x}={}", (h.before.size() - i) * q.width, word(h.before[i]));
        for (std::size_t i = 0; i < h.after.size(); ++i) line += fmt::format(" +{:#x}={}", (i + 1) * q.width, word(h.after[i]));
      }
      break;
    }
    case ScanQuery::Kind::record: {
      const auto& fields = q.record->fields();
      for (std::size_t i = 0; i < fields.size(); ++i)
        line += fmt::format(" {}={}", fields[i].name, word_hex(h.fields.at(i), fields[i].width));
      break;
    }
  }
  if (h.mapping != nullptr) line += " in " + format_mapping(*h.mapping);
  return line;
}

std::string hit_json(const ScanOptions& o, const ScanHit& h) {
  const ScanQuery& q = o.query;
  nlohmann::json j;
  place_json(o, h, j);
  switch (q.kind) {
    case ScanQuery::Kind::bytes: j["match"] = "bytes"; break;
    case ScanQuery::Kind::value: {
      j["match"] = fmt::format("u{}", 8 * q.width);
      j["value"] = hex(h.fields.at(0));
      if (q.context > 0) {
        nlohmann::json before = nlohmann::json::array(), after = nlohmann::json::array();
        for (const auto& w : h.before) before.push_back(w ? nlohmann::json(hex(*w)) : nlohmann::json(nullptr));
        for (const auto& w : h.after) after.push_back(w ? nlohmann::json(hex(*w)) : nlohmann::json(nullptr));
        j["before"] = std::move(before);
        j["after"] = std::move(after);
      }
      break;
    }
    case ScanQuery::Kind::record: {
      j["match"] = "record";
      nlohmann::json fields = nlohmann::json::object();
      const auto& f = q.record->fields();
      for (std::size_t i = 0; i < f.size(); ++i) fields[f[i].name] = hex(h.fields.at(i));
      j["fields"] = std::move(fields);
      break;
    }
  }
  if (h.mapping != nullptr) j["mapping"] = format_mapping(*h.mapping);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string size_text(std::uint64_t bytes) {
  return fmt::format("{} ({} bytes)", format_size(bytes), bytes);
}

void print_step(std::ostream& out, const WalkStep& s) {
  std::string line = fmt::format("  {:<10} [{}..{}] index {:#x}  entry pa {:#x}", s.level + (s.part.empty() ? "" : "." + s.part),
                                 s.index_high, s.index_low, s.index, s.entry_address);
  line += s.file_offset ? fmt::format(" (file {:#x})", *s.file_offset) : std::string(" (file none)");
  if (s.decision == StepDecision::error) {
    out << line << "  error: " << s.note << '\n';
    return;
  }
  line += fmt::format(" = {:#018x}", s.entry);
  if (!s.aperture.empty()) line += " aperture=" + s.aperture;
  switch (s.decision) {
    case StepDecision::table: line += fmt::format("  table -> {:#x}", s.next); break;
    case StepDecision::leaf: line += fmt::format("  leaf -> page {:#x}", s.next); break;
    case StepDecision::invalid: line += "  invalid (" + s.note + ")"; break;
    case StepDecision::error: break;
  }
  out << line << '\n';
}

nlohmann::json step_json(const WalkStep& s) {
  nlohmann::json j = {{"level", s.level},
                      {"index", s.index},
                      {"va_bits", {s.index_high, s.index_low}},
                      {"table", hex(s.table)},
                      {"entry_pa", hex(s.entry_address)},
                      {"file_offset", s.file_offset ? nlohmann::json(hex(*s.file_offset)) : nlohmann::json(nullptr)},
                      {"decision", to_string(s.decision)}};
  if (!s.part.empty()) j["part"] = s.part;
  if (s.decision != StepDecision::error) j["entry"] = hex(s.entry);
  if (s.decision == StepDecision::table || s.decision == StepDecision::leaf) j["next"] = hex(s.next);
  if (!s.aperture.empty()) j["aperture"] = s.aperture;
  if (!s.note.empty()) j["note"] = s.note;
  return j;
}

// The exit code of a chain that did not translate.
int chain_code(const WalkChain& c) {
  if (c.physical) return kExitOk;
  if (c.error) return exit_code_for(*c.error);
  return kExitFailed;
}

// "offset=0x... gpa=0x..." of a file offset, or the JSON members.
std::string file_place_text(const ScanOptions& o, std::uint64_t offset) {
  std::string line = fmt::format("offset={:#x}", offset);
  if (o.ram_map) {
    const auto gpa = o.ram_map->to_gpa(offset);
    line += gpa ? fmt::format(" gpa={:#x}", *gpa) : " gpa=none";
  }
  return line;
}
// Where a block result lies: a file offset (and GPA), or a process's virtual address.
std::string block_place_text(const ScanOptions& o, std::uint64_t at) {
  return o.file.empty() ? fmt::format("va={:#x}", at) : file_place_text(o, at);
}
nlohmann::json gpa_json(const ScanOptions& o, std::uint64_t offset) {
  const auto gpa = o.ram_map->to_gpa(offset);
  return gpa ? nlohmann::json(hex(*gpa)) : nlohmann::json(nullptr);
}

// Process mode with nothing searched and nothing skipped: a line saying that no
// mapping was selected, so "0 hits in 0" is not read as "searched, not there".
// `block`: the block size of --entropy/--twins (a mapping must hold a whole
// one), 0 for the other forms.
void note_nothing_selected(const ScanOptions& o, std::uint64_t bytes, std::size_t skipped, std::uint64_t block,
                           std::ostream& err) {
  if (!o.file.empty() || bytes != 0 || skipped != 0) return;
  const std::string whole = block != 0 ? fmt::format(" holding a whole {} block", format_size(block)) : "";
  if (o.match)
    err << fmt::format("extmem scan: nothing to scan: no readable mapping of pid {}{} matches --match\n", o.pid, whole);
  else
    err << fmt::format("extmem scan: nothing to scan: pid {} has no readable mapping{}\n", o.pid, whole);
}

// Text lines handed to the stream a MiB at a time: --entropy prints a run a
// line, and on noise that is millions of lines (10.5 million on 2 GiB of the
// bench image), where a formatted string and a stream insertion per line cost
// more than the search (bench/scan_forms.sh). On a terminal each line goes
// out as it is made, as before.
class LineBatch {
 public:
  LineBatch(std::ostream& out, bool per_line) : out_(out), per_line_(per_line) { text_.reserve(kFlushAt + 4096); }
  LineBatch(const LineBatch&) = delete;
  LineBatch& operator=(const LineBatch&) = delete;
  ~LineBatch() { flush(); }
  std::string& text() { return text_; }
  void end_line() {
    text_ += '\n';
    if (per_line_ || text_.size() >= kFlushAt) {
      if (!widened_) widen_pipe();
      flush();
    }
  }
  void flush() {
    if (!text_.empty()) out_.write(text_.data(), static_cast<std::streamsize>(text_.size()));
    if (per_line_) out_.flush();
    text_.clear();
  }

 private:
  // Once the lines fill a batch (a large output) and stdout is a pipe, its
  // buffer is grown to a batch, as far as the system lets (never shrunk): a
  // 64 KiB pipe took a reader's wake-up and a writer's sleep every 64 KiB,
  // which cost more wall time than writing the bytes (690 MB of lines on the
  // bench image: 0.33 s through a 64 KiB pipe, 0.22 s through a 1 MiB one).
  void widen_pipe() {
    widened_ = true;
    if (&out_ != &std::cout) return;
    struct stat st {};
    if (::fstat(STDOUT_FILENO, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
    const int now = ::fcntl(STDOUT_FILENO, F_GETPIPE_SZ);
    if (now >= 0 && static_cast<std::size_t>(now) < kFlushAt) (void)::fcntl(STDOUT_FILENO, F_SETPIPE_SZ, static_cast<int>(kFlushAt));
  }

  static constexpr std::size_t kFlushAt = 1 << 20;
  std::ostream& out_;
  bool per_line_;
  bool widened_ = false;
  std::string text_;
};

// fmt's "{:#x}" ("0x0" for zero) and "{}" of an unsigned number, written at
// `w`; each returns the end.
char* put_hex(char* w, std::uint64_t v) {
  const int digits = v == 0 ? 1 : (67 - __builtin_clzll(v)) / 4;
  *w++ = '0';
  *w++ = 'x';
  for (int i = digits - 1; i >= 0; --i, v >>= 4) w[i] = "0123456789abcdef"[v & 15];
  return w + digits;
}
char* put_decimal(char* w, std::uint64_t v) {
  char buf[20];
  char* p = buf + sizeof buf;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  const std::size_t n = static_cast<std::size_t>(buf + sizeof buf - p);
  std::memcpy(w, p, n);
  return w + n;
}
template <std::size_t N>
char* put_text(char* w, const char (&text)[N]) {
  std::memcpy(w, text, N - 1);
  return w + N - 1;
}

// fmt's "{:.2f}" of a double, remembered by its bits: entropies of blocks of
// one size take few distinct values, so nearly every one is a lookup.
class TwoDecimals {
 public:
  static constexpr std::size_t kMaxText = 22;  // longer ones are formatted each time
  TwoDecimals() : slots_(kSlots) {}
  /// Writes the text of v at w (kMaxText bytes of room) and returns its end;
  /// a longer text is left in `overflow`, and nullptr returned.
  char* put(char* w, double v, std::string& overflow) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    Slot& slot = slots_[(bits * 0x9e3779b97f4a7c15ull) >> (64 - kSlotBits)];
    if (!slot.used || slot.bits != bits) {
      const auto r = fmt::format_to_n(slot.text, sizeof slot.text, "{:.2f}", v);
      if (r.size > sizeof slot.text) {  // too long to keep (no entropy is): the caller appends it
        slot.used = false;
        overflow = fmt::format("{:.2f}", v);
        return nullptr;
      }
      slot.bits = bits;
      slot.size = static_cast<std::uint8_t>(r.size);
      slot.used = true;
    }
    std::memcpy(w, slot.text, slot.size);
    return w + slot.size;
  }

 private:
  static constexpr int kSlotBits = 12;
  static constexpr std::size_t kSlots = std::size_t{1} << kSlotBits;
  struct Slot {
    std::uint64_t bits = 0;
    char text[kMaxText] = {};
    std::uint8_t size = 0;
    bool used = false;
  };
  std::vector<Slot> slots_;
};

// One --entropy text line, as block_place_text and fmt write it: "{place}
// bytes={:#x} blocks={} entropy={:.2f}..{:.2f} bits/byte".
void append_entropy_line(const ScanOptions& o, const EntropyRun& r, TwoDecimals& two, std::string& s) {
  char line[256];  // at most 9 + 18 + 7 + 18 + 7 + 18 + 8 + 20 + 9 + 2 x 22 + 2 + 10 bytes
  char* w = line;
  w = o.file.empty() ? put_text(w, "va=") : put_text(w, "offset=");
  w = put_hex(w, r.offset);
  if (!o.file.empty() && o.ram_map) {
    const auto gpa = o.ram_map->to_gpa(r.offset);
    w = gpa ? put_hex(put_text(w, " gpa="), *gpa) : put_text(w, " gpa=none");
  }
  w = put_hex(put_text(w, " bytes="), r.bytes);
  w = put_decimal(put_text(w, " blocks="), r.bytes / o.entropy->block);
  w = put_text(w, " entropy=");
  std::string overflow;
  char* after = two.put(w, r.min_bits, overflow);
  if (after == nullptr) {  // a long number: the slow way, whole
    s.append(line, static_cast<std::size_t>(w - line));
    s += fmt::format("{:.2f}..{:.2f} bits/byte", r.min_bits, r.max_bits);
    return;
  }
  w = put_text(after, "..");
  after = two.put(w, r.max_bits, overflow);
  if (after == nullptr) {
    s.append(line, static_cast<std::size_t>(w - line));
    s += overflow + " bits/byte";
    return;
  }
  w = put_text(after, " bits/byte");
  s.append(line, static_cast<std::size_t>(w - line));
}

int run_entropy(const ScanOptions& o, std::ostream& out, std::ostream& err) {
  std::uint64_t runs = 0;
  LineBatch lines(out, &out == &std::cout && ::isatty(STDOUT_FILENO) == 1);
  TwoDecimals two;
  EntropySink sink = [&](const EntropyRun& r) {
    ++runs;
    if (o.json) {
      nlohmann::json j = {{"match", "entropy"}, {o.file.empty() ? "va" : "offset", hex(r.offset)}, {"bytes", r.bytes},
                          {"blocks", r.bytes / o.entropy->block}, {"min_bits", r.min_bits}, {"max_bits", r.max_bits}};
      if (o.ram_map) j["gpa"] = gpa_json(o, r.offset);
      lines.text() += j.dump();
    } else {
      append_entropy_line(o, r, two, lines.text());
    }
    lines.end_line();
    return o.query.max_hits == 0 || runs < o.query.max_hits;
  };
  auto stats = o.file.empty() ? scan_entropy_process(o.pid, o.match ? &*o.match : nullptr, *o.entropy, sink)
                              : scan_entropy(o.file, *o.entropy, sink);
  lines.flush();
  out.flush();
  if (!stats) return report_failure(err, "scan", stats.error());
  for (const std::string& s : stats->skipped) err << "extmem scan: skipped unreadable mapping " << s << '\n';
  note_nothing_selected(o, stats->bytes, stats->skipped.size(), o.entropy->block, err);
  err << fmt::format("extmem scan: {} run{} of {}-byte blocks with at least {:g} bits/byte in {}{}\n", runs,
                     runs == 1 ? "" : "s", o.entropy->block, o.entropy->bits, size_text(stats->bytes),
                     stats->stopped ? fmt::format(", stopped at --max={}", o.query.max_hits) : "");
  return kExitOk;
}

int run_twins(const ScanOptions& o, std::ostream& out, std::ostream& err) {
  auto r = o.file.empty() ? find_twins_process(o.pid, o.match ? &*o.match : nullptr, *o.twins) : find_twins(o.file, *o.twins);
  if (!r) return report_failure(err, "scan", r.error());
  for (const std::string& s : r->skipped) err << "extmem scan: skipped unreadable mapping " << s << '\n';
  constexpr std::size_t kShown = 16;  // offsets per text line; JSON lists them all
  for (const TwinGroup& g : r->groups) {
    if (o.json) {
      nlohmann::json j = {{"match", "twins"}, {"hash", hex(g.hash)}, {"block", o.twins->block}, {"count", g.offsets.size()}};
      nlohmann::json offs = nlohmann::json::array(), gpas = nlohmann::json::array();
      for (std::uint64_t off : g.offsets) {
        offs.push_back(hex(off));
        if (o.ram_map) gpas.push_back(gpa_json(o, off));
      }
      j[o.file.empty() ? "vas" : "offsets"] = std::move(offs);
      if (o.ram_map) j["gpas"] = std::move(gpas);
      out << j.dump() << '\n';
      continue;
    }
    std::string line = fmt::format("twins count={} block={} hash={:#018x}:", g.offsets.size(), format_size(o.twins->block), g.hash);
    for (std::size_t i = 0; i < g.offsets.size() && i < kShown; ++i) line += " " + block_place_text(o, g.offsets[i]);
    if (g.offsets.size() > kShown) line += fmt::format(" ... {} more (--json lists all)", g.offsets.size() - kShown);
    out << line << '\n';
  }
  out.flush();
  note_nothing_selected(o, r->bytes, r->skipped.size(), o.twins->block, err);
  err << fmt::format("extmem scan: {} twin group{} among {} blocks of {} ({} constant, left out; {} distinct) in {}{}\n",
                     r->groups.size(), r->groups.size() == 1 ? "" : "s", r->blocks, format_size(o.twins->block),
                     r->constant_blocks, r->distinct, size_text(r->bytes),
                     r->stopped ? fmt::format(", stopped at --max={} distinct contents", o.twins->max_distinct) : "");
  return kExitOk;
}

}  // namespace

int run_scan(const ScanOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.file.empty() && o.ram_map) {
    // The same check walk makes: a ram-map that runs past the file is wrong
    // about this file, and every gpa printed would be suspect.
    auto image = PhysicalImage::open(o.file, o.ram_map);
    if (!image) return report_failure(err, "scan", image.error());
  }
  if (o.entropy) return run_entropy(o, out, err);
  if (o.twins) return run_twins(o, out, err);
  HitSink sink = [&](const ScanHit& h) {
    out << (o.json ? hit_json(o, h) : hit_text(o, h)) << std::endl;  // streamed: flushed per hit
    return true;
  };
  auto stats = o.file.empty() ? scan_process(o.pid, o.query, sink, o.match ? &*o.match : nullptr) : scan_file(o.file, o.query, sink);
  if (!stats) return report_failure(err, "scan", stats.error());
  for (const std::string& s : stats->skipped) err << "extmem scan: skipped unreadable mapping " << s << '\n';
  note_nothing_selected(o, stats->bytes, stats->skipped.size(), 0, err);
  err << fmt::format("extmem scan: {} hit{} in {}{}\n", stats->hits, stats->hits == 1 ? "" : "s", size_text(stats->bytes),
                     stats->stopped ? fmt::format(", stopped at --max={}", o.query.max_hits) : "");
  return kExitOk;
}

int run_walk(const WalkOptions& options, std::ostream& out, std::ostream& err) {
  auto image = PhysicalImage::open(options.image, options.ram_map);
  if (!image) return report_failure(err, "walk", image.error());
  // A register pasted as printed (CR3 with PCID or flag bits) walks from its address bits; say what was dropped.
  WalkOptions o = options;
  if (const std::uint64_t dropped = o.root & o.format.root_flags; dropped != 0) {
    o.root &= ~o.format.root_flags;
    err << fmt::format("extmem walk: note: --root {:#x}: dropped {:#x} (bits the {} format treats as flags, not "
                       "address: for CR3, the PCID or PWT/PCD in bits 0-11 and the no-flush bit 63); walking from {:#x}\n",
                       options.root, dropped, o.format.name, o.root);
  }
  int code = kExitOk;
  auto fail = [&code](int c) {
    if (code == kExitOk) code = c;
  };
  for (std::uint64_t va : o.addresses) {
    auto r = walk(o.format, *image, o.root, va, o.all_chains);
    if (!r) {
      fail(report_failure(err, "walk", r.error()));
      continue;
    }
    if (o.json) {
      nlohmann::json j = {{"va", hex(va)}, {"format", o.format.name}, {"root", hex(o.root)}};
      if (o.root != options.root) j["root_given"] = hex(options.root);
      nlohmann::json chains = nlohmann::json::array();
      for (const WalkChain& c : r->chains) {
        nlohmann::json jc = {{"steps", nlohmann::json::array()}};
        if (!c.label.empty()) jc["label"] = c.label;
        for (const WalkStep& s : c.steps) jc["steps"].push_back(step_json(s));
        if (c.physical) {
          jc["pa"] = hex(*c.physical);
          jc["page_size"] = c.page_size;
          jc["file_offset"] = c.file_offset ? nlohmann::json(hex(*c.file_offset)) : nlohmann::json(nullptr);
        }
        if (c.error) jc["error"] = c.error->message();
        if (!c.physical && !c.error && c.steps.size() == 1 && !o.format.root_hint.empty()) jc["hint"] = o.format.root_hint;
        chains.push_back(std::move(jc));
      }
      j["chains"] = std::move(chains);
      j["pa"] = r->primary().physical ? nlohmann::json(hex(*r->primary().physical)) : nlohmann::json(nullptr);
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    } else {
      out << fmt::format("va {:#x} (format {}, root {:#x})\n", va, o.format.name, o.root);
      for (const WalkChain& c : r->chains) {
        if (o.all_chains || !c.label.empty()) out << fmt::format(" chain {}:\n", c.label.empty() ? "-" : c.label);
        for (const WalkStep& s : c.steps) print_step(out, s);
        if (c.physical) {
          out << fmt::format("  => pa {:#x}", *c.physical);
          out << (c.file_offset ? fmt::format(" (file {:#x})", *c.file_offset) : std::string(" (file none)"));
          out << fmt::format(", page {}\n", format_size(c.page_size));
        } else if (c.error) {
          out << fmt::format("  => no translation: {} could not be read\n", c.steps.back().level);
        } else {
          out << fmt::format("  => no translation: invalid entry at level {}\n", c.steps.back().level);
        }
        if (!c.physical && !c.error && c.steps.size() == 1 && !o.format.root_hint.empty())
          out << "  hint: " << o.format.root_hint << '\n';
      }
    }
    for (const WalkChain& c : r->chains)
      if (c.error) err << fmt::format("extmem walk: va {:#x}: {}\n", va, c.error->message());
    fail(chain_code(r->primary()));
  }
  return code;
}

}  // namespace extmem::memtools
