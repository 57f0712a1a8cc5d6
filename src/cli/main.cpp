// extmem: one executable, one subcommand per tool (each registers itself, see commands.h).
#include <iostream>

#include "cli/commands.h"
#include "cuda/loader.h"
#include "extmem/probe/probe.h"

namespace extmem::cli {
std::vector<AddCommand>& registry() {
  static std::vector<AddCommand> commands;
  return commands;
}
}  // namespace extmem::cli

int main(int argc, char** argv) {
  CLI::App app{"extmem: cross-process GPU memory sharing probe and live-memory tools"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "extmem 0.1.0 (Vulkan and EGL/GLES loaded at run time; " + extmem::cuda::build_note() + ")");
  std::vector<std::pair<CLI::App*, extmem::cli::Runner>> runners;
  for (extmem::cli::AddCommand add : extmem::cli::registry()) {
    std::size_t before = app.get_subcommands({}).size();
    extmem::cli::Runner run = add(app);
    runners.emplace_back(app.get_subcommands({}).at(before), std::move(run));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Every misuse exits 2 (spec/probe.md, "Output"), whatever CLI11's own code.
    std::cerr << "extmem: " << e.what() << "\nRun with --help for the accepted options.\n";
    return extmem::probe::kExitUsage;
  }
  for (auto& [cmd, run] : runners)
    if (cmd->parsed()) return run();
  return extmem::probe::kExitUsage;
}
