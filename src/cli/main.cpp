// extmem: one executable, one subcommand per tool (each registers itself, see commands.h).
// The command includes only the library's public headers (lint.cli_public_headers).
#include <iostream>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "extmem/cuda/enumerate.h"
#include "extmem/probe/probe.h"
#include "extmem/probe/trace.h"
#include "extmem/version.h"

namespace extmem::cli {
std::vector<AddCommand>& registry() {
  static std::vector<AddCommand> commands;
  return commands;
}

// Misuse CLI11 reports badly, caught before it parses: an unknown subcommand
// (CLI11 says only "A subcommand is required"), and "--opt=" with nothing after
// '=' (CLI11 then takes the next argument as the value, so "--match= --offset=0"
// complained about a missing --offset). No option accepts an empty value.
// Every word up to "--" is looked at, except that watch stops at its first
// non-option word: what follows is the watched command's own arguments.
// Returns 0 or the exit code.
int check_argv(CLI::App& app, int argc, char** argv) {
  if (argc < 2) return 0;
  const std::string_view first = argv[1];
  if (first.empty() || first[0] != '-') {
    CLI::App* sub = nullptr;
    for (CLI::App* c : app.get_subcommands({}))
      if (c->get_name() == first) sub = c;
    if (sub == nullptr) {
      std::string names;
      for (const CLI::App* c : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + c->get_name();
      std::cerr << "extmem: unknown subcommand \"" << first << "\"; accepted: " << names << "\n";
      return probe::kExitUsage;
    }
    for (int i = 2; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a == "--") {
        // diff -- with nothing after it would quietly compare over the default interval.
        if (first == "diff" && i + 1 == argc) {
          std::cerr << "extmem diff: no command after --; accepted: -- COMMAND [ARGS...] (run between the two "
                       "snapshots), or --interval=DURATION without --\n";
          return probe::kExitUsage;
        }
        break;
      }
      // Only watch takes a command without "--"; elsewhere a word is a FILE, VA or the like.
      if (a.empty() || a[0] != '-') {
        if (first == "watch") break;
        continue;
      }
      if (a.size() > 3 && a.substr(0, 2) == "--" && a.find('=') == a.size() - 1) {
        const std::string name(a.substr(0, a.size() - 1));
        const CLI::Option* o = sub->get_option_no_throw(name);
        // A value list (type name "scm|pidfd|both") is what is accepted; otherwise the help line says it.
        std::string accepted = o != nullptr ? o->get_type_name() : "";
        if (accepted.find('|') != std::string::npos) {
          for (std::size_t bar = accepted.find('|'); bar != std::string::npos; bar = accepted.find('|', bar))
            accepted.replace(bar, 1, ", ");
        } else {
          accepted = o != nullptr && !o->get_description().empty() ? o->get_description() : "see --help";
        }
        std::cerr << "extmem " << first << ": " << name << ": the value after '=' is empty; accepted: " << accepted
                  << "\n";
        return probe::kExitUsage;
      }
    }
  }
  return 0;
}

}  // namespace extmem::cli

int main(int argc, char** argv) {
  extmem::probe::tracing::event("main");
  CLI::App app{"extmem: cross-process GPU memory sharing probe and live-memory tools"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("extmem ") + extmem::kVersion +
                                        " (Vulkan and EGL/GLES loaded at run time; " + extmem::cuda::build_note() + ")");
  std::vector<std::pair<CLI::App*, extmem::cli::Runner>> runners;
  for (extmem::cli::AddCommand add : extmem::cli::registry()) {
    std::size_t before = app.get_subcommands({}).size();
    extmem::cli::Runner run = add(app);
    runners.emplace_back(app.get_subcommands({}).at(before), std::move(run));
  }
  if (int code = extmem::cli::check_argv(app, argc, argv); code != 0) return code;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Every misuse exits 2 (docs/probe.md, "Output"), whatever CLI11's own code.
    // An option given more than once (CLI11: "NAME: At Most 1 required but
    // received N") is said in plain words.
    const std::string what = e.what();
    const std::string twice = ": At Most 1 required but received ";
    const std::size_t at = what.find(twice);  // error-text: display only (exit 2 either way)
    if (at != std::string::npos) {
      std::cerr << "extmem: " << what.substr(0, at) << " given " << what.substr(at + twice.size())
                << " times; accepted: once\nRun with --help for the accepted options.\n";
      return extmem::probe::kExitUsage;
    }
    std::cerr << "extmem: " << what << "\nRun with --help for the accepted options.\n";
    return extmem::probe::kExitUsage;
  }
  for (auto& [cmd, run] : runners)
    if (cmd->parsed()) return run();
  return extmem::probe::kExitUsage;
}
