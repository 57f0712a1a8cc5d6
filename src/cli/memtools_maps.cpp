// `extmem maps` and `extmem va2pa`: option parsing only; the work is in extmem::memtools.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "extmem/memtools/commands.h"
#include "extmem/memtools/processes.h"

namespace extmem::cli {
namespace {

Runner add_maps(CLI::App& app);
Runner add_va2pa(CLI::App& app);
const Registration registered_maps{add_maps};
const Registration registered_va2pa{add_va2pa};

Runner add_maps(CLI::App& app) {
  struct State {
    std::string pid, match;
    bool pagemap = false, json = false;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand("maps", "List a process's mappings, optionally filtered by SPEC, with pagemap entries");
  cmd->add_option("--pid", s->pid, "Process id")->required();
  CLI::Option* match = cmd->add_option("--match", s->match, "Only mappings matching SPEC (docs/memtools.md), e.g. perms=rw-s,size=16K");
  cmd->add_flag("--pagemap", s->pagemap, "Show each page's pagemap entry (runs of alike pages folded into one line)");
  cmd->add_flag("--json", s->json, "One JSON document instead of text");
  return [s, match]() -> int {
    memtools::MapsOptions o;
    memtools::SyntaxError bad;
    auto pid = memtools::parse_pid(s->pid, &bad);
    if (!pid) return memtools::print_syntax_error(std::cerr, "maps", "--pid", bad);
    o.pid = *pid;
    if (match->count() > 0) {
      auto spec = memtools::MapSpec::parse(s->match, &bad);
      if (!spec) return memtools::print_syntax_error(std::cerr, "maps", "--match", bad);
      o.match = std::move(*spec);
    }
    o.pagemap = s->pagemap;
    o.json = s->json;
    return memtools::run_maps(o, std::cout, std::cerr);
  };
}

Runner add_va2pa(CLI::App& app) {
  struct State {
    std::string pid, ram_map;
    std::vector<std::string> addresses;
  };
  auto s = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand("va2pa", "Translate virtual addresses of a process to PFN and physical address");
  cmd->add_option("--pid", s->pid, "Process id")->required();
  CLI::Option* ram_map = cmd->add_option(
      "--ram-map", s->ram_map, "GPA:FILEOFF:SIZE[,...]: where guest-physical ranges lie in a RAM file; adds fileoff=");
  cmd->add_option("ADDR", s->addresses, "Virtual addresses, hexadecimal (0x optional)")->required();
  return [s, ram_map]() -> int {
    memtools::Va2paOptions o;
    memtools::SyntaxError bad;
    auto pid = memtools::parse_pid(s->pid, &bad);
    if (!pid) return memtools::print_syntax_error(std::cerr, "va2pa", "--pid", bad);
    o.pid = *pid;
    if (ram_map->count() > 0) {
      auto map = memtools::RamMap::parse(s->ram_map, &bad);
      if (!map) return memtools::print_syntax_error(std::cerr, "va2pa", "--ram-map", bad);
      o.ram_map = std::move(*map);
    }
    for (const std::string& text : s->addresses) {
      auto address = memtools::parse_number(text, memtools::NumberStyle::address, "address", &bad);
      if (!address) return memtools::print_syntax_error(std::cerr, "va2pa", "", bad);
      o.addresses.push_back(*address);
    }
    return memtools::run_va2pa(o, std::cout, std::cerr);
  };
}

}  // namespace
}  // namespace extmem::cli
