#include "extmem/memtools/diff_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ostream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/core/duration.h"
#include "extmem/memtools/commands.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/word_access.h"
#include "extmem/os/child.h"
#include "memtools/scan.h"
#include "memtools/hex_text.h"

namespace extmem::memtools {
namespace {

constexpr std::string_view kNotStopped =
    "the target was not stopped: a word can be torn, and the words of one snapshot were not read at one instant";

int report(std::ostream& err, const Error& e) {
  err << "extmem diff: " << e.message() << '\n';
  return exit_code_for(e);
}

// The program `name` names: itself when it has a '/', else the first executable in $PATH.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
  }
  return name;  // posix_spawn then reports ENOENT
}

// Where an address is, in the words of the source: "0x7f...", "gpa 0x... (file 0x...)" or "offset 0x...".
std::string place(const DiffSource& s, const DiffRegion& r, std::uint64_t address) {
  if (s.file.empty()) return hex(address);
  if (s.ram_map) return fmt::format("gpa {:#x} (file {:#x})", address, r.file_offset + (address - r.address));
  return fmt::format("offset {:#x}", address);
}

std::string describe_source(const DiffOptions& o, const Snapshot& snap) {
  const DiffSource& s = o.source;
  std::string what;
  if (s.file.empty()) {
    auto info = read_process(s.pid);
    what = fmt::format("pid {}{}, {} mapping{}", s.pid, info ? " (" + info->comm + ")" : "", snap.regions().size(),
                       snap.regions().size() == 1 ? "" : "s");
  } else {
    what = fmt::format("{}, {} range{}{}", s.file, snap.regions().size(), snap.regions().size() == 1 ? "" : "s",
                       s.ram_map ? " (guest-physical)" : "");
  }
  return fmt::format("{}, {} ({} bytes) in {}-byte words", what, format_size(snap.bytes()), snap.bytes(), snap.width());
}

void print_text(const DiffOptions& o, const Snapshot& snap, unsigned round, const std::string& after,
                const DiffResult& r, std::ostream& out) {
  const DiffSource& s = o.source;
  out << fmt::format("# round {} ({}): {} word{} changed in {} page{} of {} compared\n", round, after, r.changed_words,
                     r.changed_words == 1 ? "" : "s", r.pages.size(), r.pages.size() == 1 ? "" : "s",
                     format_size(r.bytes));
  for (std::size_t i = 0; i < r.pages.size() && i < o.max_pages; ++i) {
    const PageChanges& p = r.pages[i];
    const DiffRegion& reg = snap.regions()[p.region];
    out << fmt::format("page {}: {} word{} changed", place(s, reg, p.page), p.changed, p.changed == 1 ? "" : "s");
    if (reg.mapping) out << " in " << format_mapping(*reg.mapping);
    out << '\n';
    for (std::size_t k = 0; k < p.words.size() && k < o.max_words; ++k) {
      const WordChange& w = p.words[k];
      out << fmt::format("  {}: {} -> {}\n", place(s, reg, w.address), word_hex(w.old_value, s.width),
                         word_hex(w.new_value, s.width));
    }
    if (p.changed > std::min<std::uint64_t>(p.words.size(), o.max_words))
      out << fmt::format("  ... {} more in this page (--max-words={})\n",
                         p.changed - std::min<std::uint64_t>(p.words.size(), o.max_words), o.max_words);
  }
  if (r.pages.size() > o.max_pages)
    out << fmt::format("... {} more changed page{} (--max-pages={})\n", r.pages.size() - o.max_pages,
                       r.pages.size() - o.max_pages == 1 ? "" : "s", o.max_pages);
}

void print_json(const DiffOptions& o, const Snapshot& snap, unsigned round, const std::string& after,
                const DiffResult& r, std::ostream& out) {
  const DiffSource& s = o.source;
  auto dump = [&out](const nlohmann::json& j) { out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n'; };
  const char* key = s.file.empty() ? "va" : s.ram_map ? "gpa" : "offset";
  for (std::size_t i = 0; i < r.pages.size() && i < o.max_pages; ++i) {
    const PageChanges& p = r.pages[i];
    const DiffRegion& reg = snap.regions()[p.region];
    nlohmann::json j = {{"kind", "page"}, {"round", round}, {key, hex(p.page)}, {"changed", p.changed}};
    if (reg.mapping) j["mapping"] = format_mapping(*reg.mapping);
    nlohmann::json words = nlohmann::json::array();
    for (std::size_t k = 0; k < p.words.size() && k < o.max_words; ++k) {
      const WordChange& w = p.words[k];
      nlohmann::json jw = {{key, hex(w.address)}, {"old", hex(w.old_value)}, {"new", hex(w.new_value)}};
      if (s.ram_map) jw["file_offset"] = hex(reg.file_offset + (w.address - reg.address));
      words.push_back(std::move(jw));
    }
    j["words"] = std::move(words);
    dump(j);
  }
  nlohmann::json sum = {{"kind", "round"},         {"round", round},
                        {"after", after},          {"changed_words", r.changed_words},
                        {"changed_pages", r.pages.size()}, {"bytes", r.bytes},
                        {"not_stopped", true}};
  if (!r.vanished.empty()) sum["vanished"] = r.vanished;
  dump(sum);
}

}  // namespace

Result<std::vector<std::pair<std::uint64_t, std::uint64_t>>> parse_ranges(std::string_view text, SyntaxError* syntax) {
  constexpr std::string_view kAccepted =
      "ADDR:SIZE[,ADDR:SIZE...], ADDR hexadecimal (0x optional; 0n for decimal), SIZE a number with optional K/M/G, "
      "e.g. 0x100000000:64K";
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  if (text.empty()) return detail::syntax_failure(syntax, "range", text, 0, "the list is empty", kAccepted);
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::size_t colon = text.find(':', pos);
    if (colon == std::string_view::npos || colon >= comma)
      return detail::syntax_failure(syntax, "range", text, std::min(comma, text.size()), "expected ':' and a SIZE",
                                    kAccepted);
    detail::ScanFailure f;
    auto address = detail::scan_number(text, pos, colon, NumberStyle::address, f);
    if (!address) return detail::syntax_failure(syntax, "range", text, f.column, f.problem, kAccepted);
    auto size = detail::scan_number(text, colon + 1, comma, NumberStyle::quantity, f);
    if (!size) return detail::syntax_failure(syntax, "range", text, f.column, f.problem, kAccepted);
    if (*size == 0) return detail::syntax_failure(syntax, "range", text, colon + 1, "the size is 0", kAccepted);
    if (*address + (*size - 1) < *address)
      return detail::syntax_failure(syntax, "range", text, pos, "the range runs past the end of the address space",
                                    kAccepted);
    out.emplace_back(*address, *size);
    if (comma == text.size()) break;
    pos = comma + 1;
  }
  return out;
}

int run_diff(const DiffOptions& o, std::ostream& out, std::ostream& err) {
  auto snap = Snapshot::take(o.source);
  if (!snap) return report(err, snap.error());
  for (const std::string& s : snap->skipped()) err << "extmem diff: left out unreadable mapping " << s << '\n';
  const std::string header = describe_source(o, *snap);
  if (o.json) {
    nlohmann::json j = {{"kind", "start"}, {"source", header}, {"note", kNotStopped}};
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else {
    out << "# extmem diff: " << header << "\n# " << kNotStopped << '\n';
  }
  out.flush();
  for (unsigned round = 1; round <= o.rounds; ++round) {
    std::string after;
    if (!o.command.empty() && round == 1) {
      auto child = os::ChildProcess::spawn(find_program(o.command[0]), o.command, {});
      if (!child) {
        err << "extmem diff: could not start " << o.command[0] << ": " << child.error().message() << '\n';
        return exit_code_for(child.error());  // ENOENT: 5, EACCES: 6 (the exit-code table), else 1
      }
      auto ended = child->wait();
      if (!ended) return report(err, ended.error());
      after = "after " + o.command[0] + ": " + ended->describe();
    } else {
      std::this_thread::sleep_for(o.interval);
      after = "after " + format_duration(o.interval);
    }
    auto r = snap->compare(o.max_words);
    if (!r) return report(err, r.error());
    if (o.json)
      print_json(o, *snap, round, after, *r, out);
    else
      print_text(o, *snap, round, after, *r, out);
    for (const std::string& v : r->vanished) err << "extmem diff: could not read again " << v << '\n';
    out.flush();
  }
  return kExitOk;
}

}  // namespace extmem::memtools
