// `extmem probe serve`: its options, under the probe subcommand.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace extmem::cli {

/// Adds the `serve` subcommand to `probe` and returns what runs it once parsed
/// (call it only when the subcommand was given: its parsed()).
std::function<int()> add_probe_serve(CLI::App* probe, CLI::App** serve);

}  // namespace extmem::cli
