#include "cli/memtools_process_options.h"

#include <signal.h>

#include <iostream>

#include "extmem/memtools/commands.h"

namespace extmem::cli {
namespace {

std::atomic<bool> g_stop{false};
void request_stop(int) { g_stop.store(true); }

}  // namespace

std::size_t ProcessOptions::given() const {
  return comm_option->count() + cmdline_option->count() + pid_option->count();
}

void add_process_options(CLI::App& cmd, ProcessOptions& p, PidOption pid) {
  auto add_pid = [&] {
    p.pid_option = cmd.add_option("--pid", p.pids, "These processes (repeat or separate with commas)")->delimiter(',');
  };
  if (pid == PidOption::first) add_pid();
  p.comm_option = cmd.add_option("--comm", p.comm, "Processes whose name (/proc/PID/comm) is exactly this");
  p.cmdline_option = cmd.add_option("--cmdline", p.cmdline, "Processes whose command line matches this POSIX extended regex");
  if (pid == PidOption::last) add_pid();
}

std::optional<int> parse_process_options(const ProcessOptions& p, const char* command, memtools::ProcessFilter& filter) {
  memtools::SyntaxError bad;
  if (p.comm_option->count() > 0) filter.comm = p.comm;
  if (p.cmdline_option->count() > 0) {
    auto re = memtools::Regex::compile(p.cmdline, "regex", &bad);
    if (!re) return memtools::print_syntax_error(std::cerr, command, "--cmdline", bad);
    filter.cmdline = std::move(*re);
  }
  for (const std::string& text : p.pids) {
    auto pid = memtools::parse_pid(text, &bad);
    if (!pid) return memtools::print_syntax_error(std::cerr, command, "--pid", bad);
    filter.pids.push_back(*pid);
  }
  return std::nullopt;
}

const std::atomic<bool>* stop_on_interrupt() {
  struct sigaction sa {};
  sa.sa_handler = request_stop;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  return &g_stop;
}

}  // namespace extmem::cli
