// Subcommand registration: each subcommand file adds itself to the app and
// returns the function that runs it after parsing.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace extmem::cli {

using Runner = std::function<int()>;

/// Adds `extmem probe` to `app`.
Runner add_probe(CLI::App& app);

}  // namespace extmem::cli
