// `extmem peek` and `extmem poke`: option parsing only; the work is in extmem::memtools.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "extmem/memtools/commands.h"
#include "extmem/memtools/processes.h"
#include "extmem/memtools/word_access.h"

namespace extmem::cli {
namespace {

Runner add_peek(CLI::App& app);
Runner add_poke(CLI::App& app);
const Registration registered_peek{add_peek};
const Registration registered_poke{add_poke};

// Options peek and poke share: the target (--pid or --file), --width and --match.
struct Target {
  std::string pid, file, width = "4", match, ram_map;
  CLI::Option* pid_option = nullptr;
  CLI::Option* ram_map_option = nullptr;
  CLI::Option* file_option = nullptr;
  CLI::Option* match_option = nullptr;

  void add_to(CLI::App* cmd) {
    pid_option = cmd->add_option("--pid", pid, "Process whose memory is accessed (through /proc/PID/mem)");
    file_option = cmd->add_option("--file", file, "File accessed instead, e.g. a guest RAM image; ADDR is then a byte offset (hex, like every address)");
    pid_option->excludes(file_option);
    cmd->add_option("--width", width, "Word size in bytes: 1, 2, 4 or 8")->capture_default_str();
    match_option = cmd->add_option("--match", match, "The address must lie in a mapping matching SPEC (docs/memtools.md)");
    match_option->excludes(file_option);
    ram_map_option = cmd->add_option("--ram-map", ram_map,
                                     "With --file: ADDR is guest-physical, placed in the file by GPA:FILEOFF:SIZE[,...]");
    ram_map_option->needs(file_option);
  }

  // Fills `o`; on bad input prints the error and returns the exit code.
  std::optional<int> parse(const char* command, memtools::WordOptions& o) const {
    memtools::SyntaxError bad;
    if (pid_option->count() == 0 && file_option->count() == 0) {
      std::cerr << "extmem " << command << ": give --pid=PID (a process) or --file=FILE (a file)\n";
      return memtools::kExitUsage;
    }
    if (pid_option->count() > 0) {
      auto p = memtools::parse_pid(pid, &bad);
      if (!p) return memtools::print_syntax_error(std::cerr, command, "--pid", bad);
      o.pid = *p;
    }
    o.file = file;
    if (file_option->count() > 0) {
      // Opened once here so that a missing, unreadable or wrong kind of file is an error naming --file.
      const bool poke = std::string_view(command) == "poke";
      auto opened = memtools::WordTarget::open_file(file, poke);
      if (!opened) return memtools::file_option_error(std::cerr, command, poke ? "writable" : "readable", file, opened.error());
    }
    auto w = memtools::parse_width(width, &bad);
    if (!w) return memtools::print_syntax_error(std::cerr, command, "--width", bad);
    o.width = *w;
    if (match_option->count() > 0) {
      auto spec = memtools::MapSpec::parse(match, &bad);
      if (!spec) return memtools::print_syntax_error(std::cerr, command, "--match", bad);
      o.match = std::move(*spec);
    }
    if (ram_map_option->count() > 0) {
      auto map = memtools::RamMap::parse(ram_map, &bad);
      if (!map) return memtools::print_syntax_error(std::cerr, command, "--ram-map", bad);
      o.ram_map = std::move(*map);
    }
    return std::nullopt;
  }

  // Every address is hexadecimal, a file offset or GPA too (file offsets were decimal once; "0n4096" asks for that).
  memtools::NumberStyle address_style() const { return memtools::NumberStyle::address; }
  const char* address_subject() const {
    return ram_map_option->count() > 0 ? "guest-physical address" : file_option->count() > 0 ? "offset" : "address";
  }
};

Runner add_peek(CLI::App& app) {
  struct State {
    Target target;
    std::vector<std::string> addresses;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand("peek", "Read 1/2/4/8-byte words of a process (no ptrace) or a file");
  s->target.add_to(cmd);
  cmd->add_option("ADDR", s->addresses, "Addresses, hex (0x optional; 0n for decimal), or with --file byte offsets, hex too")->required();
  return [s]() -> int {
    memtools::WordOptions o;
    if (auto code = s->target.parse("peek", o)) return *code;
    std::vector<std::uint64_t> addresses;
    memtools::SyntaxError bad;
    for (const std::string& text : s->addresses) {
      auto a = memtools::parse_number(text, s->target.address_style(), s->target.address_subject(), &bad);
      if (!a) return memtools::print_syntax_error(std::cerr, "peek", "", bad);
      addresses.push_back(*a);
    }
    return memtools::run_peek(o, addresses, std::cout, std::cerr);
  };
}

Runner add_poke(CLI::App& app) {
  struct State {
    Target target;
    std::string address, value, expect, audit;
    CLI::Option* expect_option = nullptr;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand(
      "poke", "Write one 1/2/4/8-byte word of a process (no ptrace) or a file, read it back, audit it");
  s->target.add_to(cmd);
  s->expect_option = cmd->add_option("--expect", s->expect, "Write only if the old value equals this (compare-then-write)");
  cmd->add_option("--audit", s->audit, "Append the audit line to FILE (default: standard error)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            // Empty would read as "not given" and the audit would go to standard error unasked.
            return v.empty() ? "the path is empty; accepted: a file to append to, in an existing, writable directory" : "";
          },
          "FILE"));
  cmd->add_option("ADDR", s->address, "Address, hex (0x optional; 0n for decimal), or with --file a byte offset, hex too")->required();
  cmd->add_option("VALUE", s->value, "Value to write: decimal or 0x-hex, fitting the width")->required();
  return [s]() -> int {
    memtools::WordOptions o;
    if (auto code = s->target.parse("poke", o)) return *code;
    memtools::SyntaxError bad;
    auto address = memtools::parse_number(s->address, s->target.address_style(), s->target.address_subject(), &bad);
    if (!address) return memtools::print_syntax_error(std::cerr, "poke", "", bad);
    auto value = memtools::parse_word_value(s->value, o.width, "value", &bad);
    if (!value) return memtools::print_syntax_error(std::cerr, "poke", "", bad);
    std::optional<std::uint64_t> expect;
    if (s->expect_option->count() > 0) {
      auto e = memtools::parse_word_value(s->expect, o.width, "value", &bad);
      if (!e) return memtools::print_syntax_error(std::cerr, "poke", "--expect", bad);
      expect = *e;
    }
    return memtools::run_poke(o, *address, *value, expect, s->audit, std::cout, std::cerr);
  };
}

}  // namespace
}  // namespace extmem::cli
