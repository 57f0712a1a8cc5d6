// Subcommand registration: each subcommand file registers itself with a static
// Registration, adds its options to the app, and returns the function that runs
// it after parsing. Adding a subcommand touches only its own file.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace extmem::cli {

using Runner = std::function<int()>;
using AddCommand = Runner (*)(CLI::App& app);

/// The registered subcommands, in registration order.
std::vector<AddCommand>& registry();

/// `static const Registration r{add_foo};` in a command's file registers it.
struct Registration {
  explicit Registration(AddCommand add) { registry().push_back(add); }
};

}  // namespace extmem::cli
