// What the commands that act on running processes share: --comm, --cmdline
// and --pid choose the processes (memtools::ProcessFilter), and SIGINT or
// SIGTERM asks a long run to stop between its rounds.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "extmem/memtools/processes.h"

namespace extmem::cli {

/// --comm, --cmdline and --pid as given.
struct ProcessOptions {
  std::string comm, cmdline;
  std::vector<std::string> pids;
  CLI::Option* comm_option = nullptr;
  CLI::Option* cmdline_option = nullptr;
  CLI::Option* pid_option = nullptr;
  /// How many of the three were given.
  std::size_t given() const;
};

/// Which of the three options comes first in the command's help.
enum class PidOption { first, last };

/// Adds --comm, --cmdline and --pid to `cmd`, stored into `p` (which must outlive the parse).
void add_process_options(CLI::App& cmd, ProcessOptions& p, PidOption pid);

/// Those given, into `filter`. Returns nothing, or the exit status of a
/// refusal it has said on standard error for `command`.
std::optional<int> parse_process_options(const ProcessOptions& p, const char* command, memtools::ProcessFilter& filter);

/// Makes SIGINT and SIGTERM set the returned flag (from now on, for the rest of the process).
const std::atomic<bool>* stop_on_interrupt();

}  // namespace extmem::cli
