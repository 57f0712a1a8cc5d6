// `extmem report FILE.json...`: option parsing only; the work is in extmem::report.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "extmem/core/error.h"
#include "extmem/os/file.h"
#include "report/fleet.h"

namespace extmem::cli {
namespace {

Runner add_report(CLI::App& app);
const Registration registered{add_report};

Runner add_report(CLI::App& app) {
  struct State {
    std::vector<std::string> files;
    std::string markdown, html;
  };
  auto st = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Merge extmem probe --json documents from many devices into a device x row matrix (Markdown, HTML)");
  cmd->add_option("files", st->files, "extmem probe --json documents (schema_version 1)")->required();
  cmd->add_option("--markdown", st->markdown, "Write the matrix as Markdown to FILE (default: stdout)");
  cmd->add_option("--html", st->html, "Write the matrix as a self-contained HTML page to FILE");
  return [st]() -> int {
    // Outputs first: a bad output path is found before any input is read, and nothing is half-written.
    for (auto [opt, path] : {std::pair{"--markdown", &st->markdown}, std::pair{"--html", &st->html}}) {
      if (path->empty()) continue;
      if (std::string problem = os::creatable_problem(*path); !problem.empty()) {
        std::cerr << "extmem report: " << opt << ": " << problem << "\n";
        return 2;
      }
    }
    std::vector<report::Run> runs;
    for (const std::string& f : st->files) {
      auto run = report::load_run(f);
      if (!run) {
        const Error& e = run.error();
        std::cerr << "extmem report: " << e.step << ": " << (e.code.empty() ? "" : e.code + ": ") << e.detail << "\n";
        return 2;
      }
      runs.push_back(std::move(*run));
    }
    if (!st->markdown.empty()) {
      if (auto s = os::write_file_atomically(st->markdown, report::markdown(runs)); !s) {
        std::cerr << "extmem report: " << s.error().message() << "\n";
        return 3;
      }
    }
    if (!st->html.empty()) {
      if (auto s = os::write_file_atomically(st->html, report::html(runs)); !s) {
        std::cerr << "extmem report: " << s.error().message() << "\n";
        return 3;
      }
    }
    if (st->markdown.empty() && st->html.empty()) std::cout << report::markdown(runs);
    return 0;
  };
}

}  // namespace
}  // namespace extmem::cli
