#include "extmem/memtools/commands.h"

#include <algorithm>
#include <cerrno>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "extmem/memtools/pagemap.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/word_access.h"
#include "memtools/hex_text.h"

namespace extmem::memtools {
namespace {

constexpr std::uint64_t kPagemapChunk = 4096;  // pages per pagemap read

int report(std::ostream& err, std::string_view command, const Error& e) {
  err << "extmem " << command << ": " << e.message() << '\n';
  return exit_code_for(e);
}

std::string format_maps_line(const os::MapEntry& m) {
  return fmt::format("{:012x}-{:012x} {} {:08x} {:02x}:{:02x} {:<8} {:>6} {}", m.start, m.end, m.perms, m.offset,
                     m.dev_major, m.dev_minor, m.inode, format_size(m.size()), m.path);
}

std::string run_frame_text(const PageRun& run) {
  const PageEntry& e = run.first;
  std::string out = describe_flags(e);
  if (e.pfn)
    out += run.pages == 1 ? fmt::format(" pfn={:#x}", *e.pfn) : fmt::format(" pfn={:#x}..{:#x}", *e.pfn, *e.pfn + run.pages - 1);
  else if (e.swap_offset)
    out += run.pages == 1 ? fmt::format(" swap={}:{:#x}", *e.swap_type, *e.swap_offset)
                          : fmt::format(" swap={}:{:#x}..{:#x}", *e.swap_type, *e.swap_offset, *e.swap_offset + run.pages - 1);
  else if (e.pfn_hidden)
    out += e.present ? " pfn=hidden" : " swap=hidden";
  return out;
}

nlohmann::json run_json(const PageRun& run) {
  const PageEntry& e = run.first;
  nlohmann::json j = {{"start", hex(run.start)},   {"pages", run.pages},
                      {"present", e.present},      {"swapped", e.swapped},
                      {"exclusive", e.exclusive},  {"file_or_shared", e.file_or_shared},
                      {"soft_dirty", e.soft_dirty}, {"uffd_wp", e.uffd_wp},
                      {"guard", e.guard},          {"pfn_hidden", e.pfn_hidden}};
  if (e.pfn) j["pfn_first"] = hex(*e.pfn);
  if (e.swap_type) j["swap_type"] = *e.swap_type;
  if (e.swap_offset) j["swap_offset_first"] = hex(*e.swap_offset);
  return j;
}

// Walks the pagemap of one mapping in chunks, calling `emit` with each finished run.
template <typename Emit>
Status for_each_run(const PagemapReader& reader, const os::MapEntry& m, bool& empty, Emit emit) {
  const std::uint64_t pages = m.size() / page_size();
  std::optional<PageRun> open;
  empty = true;
  for (std::uint64_t done = 0; done < pages;) {
    const std::uint64_t want = std::min(kPagemapChunk, pages - done);
    auto entries = reader.read(m.start + done * page_size(), want);
    if (!entries) return std::move(entries).error();
    for (std::size_t i = 0; i < entries->size(); ++i) {
      const PageEntry& e = (*entries)[i];
      if (open && continues_run(*open, e)) {
        ++open->pages;
        continue;
      }
      if (open) emit(*open);
      open = PageRun{m.start + (done + i) * page_size(), 1, e};
    }
    if (entries->size() < want) break;  // past the user address space
    done += want;
  }
  if (open) {
    empty = false;
    emit(*open);
  }
  return {};
}

// "0x7f..." for a process, "FILE@0xOFFSET" or "FILE@0xOFFSET (gpa 0x...)" for a file.
std::string where(const WordOptions& o, std::uint64_t address, std::uint64_t offset) {
  if (o.file.empty()) return fmt::format("{:#x}", address);
  if (o.ram_map) return fmt::format("{}@{:#x} (gpa {:#x})", o.file, offset, address);
  return fmt::format("{}@{:#x}", o.file, offset);
}

}  // namespace

int exit_code_for(const Error& e) {
  if (std::optional<WordCode> code = word_code(e)) {
    switch (*code) {
      case WordCode::not_mapped:
      case WordCode::crosses_mapping:
      case WordCode::spec_mismatch:
      case WordCode::not_writable: return kExitRefused;
      case WordCode::expect_mismatch: return kExitExpectMismatch;
      case WordCode::past_end: return kExitPastEnd;
    }
  }
  if (process_gone(e)) return kExitNoProcess;
  if (e.is_errno(EACCES) || e.is_errno(EPERM)) return kExitPermission;
  if (e.kind == ErrorKind::invalid_argument && e.code.empty()) return kExitUsage;
  return kExitFailed;
}

int file_option_error(std::ostream& err, std::string_view command, std::string_view access, std::string_view path,
                      const Error& e) {
  err << "extmem " << command << ": bad --file: " << (path.empty() ? "the path is empty" : e.message())
      << "\naccepted: an existing " << access << " regular file or block device\n";
  const int code = exit_code_for(e);
  return !path.empty() && (code == kExitNoProcess || code == kExitPermission) ? code : kExitUsage;
}

int audit_usage_error(std::ostream& err, std::string_view command, const Error& e) {
  err << "extmem " << command << ": bad --audit: " << e.message()
      << "\naccepted: a file to append to (created if missing) in an existing, writable directory\n";
  return kExitUsage;
}

int print_syntax_error(std::ostream& err, std::string_view command, std::string_view option,
                       const SyntaxError& error) {
  err << "extmem " << command << ": " << error.render(option);
  return kExitUsage;
}

int run_maps(const MapsOptions& o, std::ostream& out, std::ostream& err) {
  auto maps = read_live_maps(o.pid);
  if (!maps) return report(err, "maps", maps.error());
  std::optional<PagemapReader> reader;
  if (o.pagemap) {
    auto opened = PagemapReader::open(o.pid);
    if (!opened) return report(err, "maps", opened.error());
    reader.emplace(std::move(*opened));
  }
  const auto info = read_process(o.pid);
  const std::string comm = info ? info->comm : "?";
  nlohmann::json doc;
  if (o.json) {
    doc = {{"pid", o.pid}, {"comm", comm}, {"mappings", nlohmann::json::array()}};
    if (o.match) doc["match"] = o.match->text();
    if (reader) doc["pfn_visible"] = reader->pfn_visible();
  } else {
    out << fmt::format("pid {} ({}): {} mappings", o.pid, comm, maps->size());
    if (o.match) out << fmt::format(", SPEC \"{}\"", o.match->text());
    out << '\n';
    if (reader)
      out << (reader->pfn_visible()
                  ? "pagemap: PFNs shown (CAP_SYS_ADMIN); runs of pages with the same flags and consecutive frames are one line\n"
                  : "pagemap: PFNs hidden: this process lacks CAP_SYS_ADMIN, the kernel reports them as 0; runs of pages with the same flags are one line\n");
  }
  std::size_t shown = 0;
  for (const os::MapEntry& m : *maps) {
    if (o.match && !o.match->matches(m)) continue;
    ++shown;
    nlohmann::json jm;
    if (o.json) {
      jm = {{"start", hex(m.start)}, {"end", hex(m.end)},     {"size", m.size()},
            {"perms", m.perms},      {"offset", hex(m.offset)}, {"dev", fmt::format("{:02x}:{:02x}", m.dev_major, m.dev_minor)},
            {"inode", m.inode},      {"path", m.path}};
    } else {
      out << format_maps_line(m) << '\n';
    }
    if (reader) {
      bool empty = true;
      nlohmann::json runs = nlohmann::json::array();
      auto st = for_each_run(*reader, m, empty, [&](const PageRun& r) {
        if (o.json)
          runs.push_back(run_json(r));
        else
          out << fmt::format("    {:012x}-{:012x} {:>6} {} {}\n", r.start, r.start + r.pages * page_size(), r.pages,
                             r.pages == 1 ? "page " : "pages", run_frame_text(r));
      });
      if (!st) return report(err, "maps", st.error());
      if (o.json) jm["pages"] = std::move(runs);
      else if (empty) out << "    (no pagemap entries: outside the user address space)\n";
    }
    if (o.json) doc["mappings"].push_back(std::move(jm));
  }
  if (o.json) {
    out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else if (o.match) {
    out << fmt::format("{} of {} mappings match\n", shown, maps->size());
  }
  return kExitOk;
}

int run_va2pa(const Va2paOptions& o, std::ostream& out, std::ostream& err) {
  auto maps = read_live_maps(o.pid);
  if (!maps) return report(err, "va2pa", maps.error());
  auto reader = PagemapReader::open(o.pid);
  if (!reader) return report(err, "va2pa", reader.error());
  if (!reader->pfn_visible())
    err << "extmem va2pa: PFNs hidden: this process lacks CAP_SYS_ADMIN (the kernel reports them as 0)\n";
  int code = kExitOk;
  auto fail = [&code](int c) {
    if (code == kExitOk) code = c;
  };
  for (std::uint64_t address : o.addresses) {
    const os::MapEntry* mapping = nullptr;
    for (const os::MapEntry& m : *maps)
      if (m.contains(address)) mapping = &m;
    if (mapping == nullptr) {
      out << fmt::format("{:#x} mapping=none (outside every mapping of pid {})\n", address, o.pid);
      fail(kExitRefused);
      continue;
    }
    auto t = translate(*reader, address);
    if (!t) {
      out << fmt::format("{:#x} error=\"{}\" mapping={}\n", address, t.error().message(), format_mapping(*mapping));
      fail(exit_code_for(t.error()));
      continue;
    }
    std::string flags = describe_flags(t->page);
    std::replace(flags.begin(), flags.end(), ' ', ',');
    std::string line = fmt::format("{:#x}", address);
    if (t->physical) {
      line += fmt::format(" pfn={:#x} pa={:#x}", *t->page.pfn, *t->physical);
      if (o.ram_map) {
        if (auto off = o.ram_map->to_file_offset(*t->physical)) {
          line += fmt::format(" fileoff={:#x}", *off);
        } else {
          line += " fileoff=none";
          fail(kExitFailed);
        }
      }
    } else if (t->page.pfn_hidden && t->page.present) {
      line += " pfn=hidden pa=hidden";
      fail(kExitPermission);
    } else {
      line += " pfn=none pa=none";
      if (t->page.swap_offset) line += fmt::format(" swap={}:{:#x}", *t->page.swap_type, *t->page.swap_offset);
      else if (t->page.pfn_hidden) line += " swap=hidden";
      fail(kExitFailed);
    }
    line += fmt::format(" flags={} mapping={}", flags, format_mapping(*mapping));
    out << line << '\n';
  }
  return code;
}

Result<std::uint64_t> file_offset_of(const WordOptions& o, std::uint64_t address) {
  if (!o.ram_map) return address;
  const std::string step = fmt::format("translate guest-physical {:#x}", address);
  const auto first = o.ram_map->to_file_offset(address);
  if (!first) return word_error(step, ErrorKind::invalid_argument, WordCode::not_mapped, "outside every --ram-map range");
  const auto last = address + (o.width - 1) < address ? std::nullopt : o.ram_map->to_file_offset(address + (o.width - 1));
  if (!last || *last != *first + (o.width - 1))
    return word_error(step, ErrorKind::invalid_argument, WordCode::crosses_mapping,
                      fmt::format("the {}-byte word runs past the end of its --ram-map range", o.width));
  return *first;
}

int run_peek(const WordOptions& o, const std::vector<std::uint64_t>& addresses, std::ostream& out,
             std::ostream& err) {
  int code = kExitOk;
  for (std::uint64_t address : addresses) {
    auto offset = o.file.empty() ? Result<std::uint64_t>(address) : file_offset_of(o, address);
    auto r = !offset        ? Result<PeekResult>(offset.error())
             : o.file.empty() ? peek_process(o.pid, address, o.width, o.match ? &*o.match : nullptr)
                              : peek_file(o.file, *offset, o.width);
    if (!r) {
      const int c = report(err, "peek", r.error());
      if (code == kExitOk) code = c;
      continue;
    }
    out << fmt::format("{} u{} = {} ({})", where(o, address, *offset), 8 * o.width, word_hex(r->value, o.width),
                       r->value);
    if (r->mapping) out << " in " << format_mapping(*r->mapping);
    out << '\n';
  }
  return code;
}

int run_poke(const WordOptions& o, std::uint64_t address, std::uint64_t value, std::optional<std::uint64_t> expect,
             const std::string& audit_path, std::ostream& out, std::ostream& err) {
  // Open the audit log first: a write that cannot be audited is not made.
  auto audit = AuditLog::open(audit_path);
  if (!audit) return audit_usage_error(err, "poke", audit.error());
  auto offset = o.file.empty() ? Result<std::uint64_t>(address) : file_offset_of(o, address);
  if (!offset) return report(err, "poke", offset.error());
  PokeRequest request{*offset, o.width, value, expect, o.match ? &*o.match : nullptr};
  auto r = o.file.empty() ? poke_process(o.pid, request) : poke_file(o.file, request);
  if (!r) return report(err, "poke", r.error());
  if (!o.file.empty() && o.ram_map) r->gpa = address;  // the audit line names the guest-physical address too
  int code = kExitOk;
  if (auto st = audit->record(*r); !st) code = report(err, "poke", st.error());
  out << fmt::format("{} u{} {} -> {} ({})", where(o, address, *offset), 8 * o.width, word_hex(r->old_value, o.width),
                     word_hex(r->written, o.width),
                     r->read_back ? "read back " + word_hex(*r->read_back, o.width) : "the process ended right after");
  if (r->mapping) out << " in " << format_mapping(*r->mapping);
  out << '\n';
  if (r->read_back_differs()) {
    err << fmt::format("extmem poke: read back {} after writing {} at {:#x}\n", word_hex(*r->read_back, o.width),
                       word_hex(r->written, o.width), address);
    return kExitFailed;
  }
  return code;
}

}  // namespace extmem::memtools
