// `extmem report FILE.json...`: option parsing only; the work is in extmem::report.
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/duration_option.h"
#include "extmem/core/error.h"
#include "extmem/os/file.h"
#include "extmem/probe/health.h"
#include "extmem/report/report.h"

namespace extmem::cli {
namespace {

Runner add_report(CLI::App& app);
const Registration registered{add_report};

Runner add_report(CLI::App& app) {
  struct State {
    std::vector<std::string> files;
    std::string markdown, html, expect;
    std::chrono::nanoseconds stale_after = std::chrono::hours(24);
  };
  auto st = std::make_shared<State>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Merge extmem probe --json documents from many devices into a device x row matrix (Markdown, HTML)");
  cmd->add_option("files", st->files,
                  "extmem probe --json documents (schema_version 1), each FILE or NODE=FILE (NODE labels the run's node; "
                  "default: the document's context.hostname, else the file's name); extmem probe serve --json "
                  "documents too, joined to their --peer runs by run id")
      ->required();
  cmd->add_option("--expect", st->expect,
                  "Baseline of expected statuses, the file extmem probe --expect reads (docs/fleet.md): rows whose status "
                  "differs are marked");
  add_duration_option(*cmd, "--stale-after", st->stale_after,
                      "Mark a node STALE when its oldest current result is older than the newest input's by more than this (default 24h)",
                      DurationRange{std::chrono::seconds(1), std::chrono::hours(24 * 366)});
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
      std::vector<std::string> inputs{st->expect};
      for (const std::string& arg : st->files) inputs.push_back(report::split_input(arg).path);
      for (const std::string& in : inputs) {
        if (in.empty() || !os::same_file(*path, in)) continue;
        std::cerr << "extmem report: " << opt << ": " << *path << " is also an input (" << in
                  << "): writing it would replace what the report is made from; give another file\n";
        return 2;
      }
    }
    // The baseline before the documents: a malformed one is refused with probe --expect's message.
    std::vector<probe::Expectation> baseline;
    if (!st->expect.empty()) {
      auto read = probe::read_baseline(st->expect);
      if (!read) {
        std::cerr << "extmem report: " << read.error().step << ": " << read.error().detail << "\n";
        return 2;
      }
      baseline = std::move(*read);
    }
    std::vector<report::Run> runs;
    std::vector<report::ServedSession> served;  // extmem probe serve --json inputs
    for (const std::string& arg : st->files) {
      const report::Input in = report::split_input(arg);
      auto doc = report::load_document(in.path);
      if (!doc) {
        const Error& e = doc.error();
        std::cerr << "extmem report: " << e.step << ": " << (e.code.empty() ? "" : e.code + ": ") << e.detail << "\n";
        return 2;
      }
      served.insert(served.end(), doc->served.begin(), doc->served.end());
      if (!doc->run) continue;
      if (!in.node.empty()) doc->run->node = in.node;
      runs.push_back(std::move(*doc->run));
    }
    if (runs.empty()) {
      std::cerr << "extmem report: no extmem probe --json document among the inputs (serve documents join the runs of "
                   "their --peer side; give those too)\n";
      return 2;
    }
    report::FleetOptions fleet;
    fleet.served = &served;
    fleet.baseline = st->expect.empty() ? nullptr : &baseline;
    fleet.stale_after_s = std::chrono::duration_cast<std::chrono::seconds>(st->stale_after).count();
    if (!st->markdown.empty()) {
      if (auto s = os::write_file_atomically(st->markdown, report::markdown(runs, fleet)); !s) {
        std::cerr << "extmem report: " << s.error().message() << "\n";
        return 3;
      }
    }
    if (!st->html.empty()) {
      if (auto s = os::write_file_atomically(st->html, report::html(runs, fleet)); !s) {
        std::cerr << "extmem report: " << s.error().message() << "\n";
        return 3;
      }
    }
    if (st->markdown.empty() && st->html.empty()) std::cout << report::markdown(runs, fleet);
    return 0;
  };
}

}  // namespace
}  // namespace extmem::cli
