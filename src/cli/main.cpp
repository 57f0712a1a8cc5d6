// extmem: one executable, one subcommand per tool.
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "extmem/probe/probe.h"

int main(int argc, char** argv) {
  CLI::App app{"extmem: cross-process GPU memory sharing probe and live-memory tools"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "extmem 0.1.0 (Vulkan loaded at run time; GLES, CUDA: not built)");
  extmem::cli::Runner probe = extmem::cli::add_probe(app);
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
  return probe();
}
