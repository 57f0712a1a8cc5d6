// `extmem watch`: run a command (or attach to pids) and sample the process
// tree every period until it ends; then print and write the summary.
// The pieces are public too: Sampler (sampler.h), SeriesWriter (series.h),
// History/summarize (summary.h), svg_plot (plot.h), WatchedCommand (command.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "extmem/watch/series.h"
#include "extmem/watch/summary.h"

namespace extmem::watch {

/// Exit statuses of the watch itself (otherwise it exits with the command's status).
enum WatchExit : int {
  kWatchOutputFailed = 1,   ///< the command exited 0 (or --pid mode) but --summary or --plot could not be written
  kWatchUsage = 2,          ///< bad option, unwritable output path, --pid not running (nothing was started)
  kWatchCannotExecute = 126,  ///< COMMAND found but could not be executed
  kWatchNotFound = 127,     ///< COMMAND not found
};

struct WatchOptions {
  std::vector<std::string> command;  ///< COMMAND and its arguments (exclusive with pids)
  std::vector<pid_t> pids;           ///< --pid roots (exclusive with command)
  std::chrono::nanoseconds period = std::chrono::milliseconds(100);
  std::optional<std::chrono::nanoseconds> duration;  ///< stop after; the command then gets SIGTERM
  std::string out_path;              ///< time series ("-": stdout); empty: none
  SeriesFormat format = SeriesFormat::tsv;
  std::string summary_path;          ///< JSON summary; empty: none
  std::string plot_path;             ///< SVG; empty: none
  bool classes = false;
  bool pss = false;
  double budget = 0.01;              ///< map-read CPU budget, fraction of one core (SamplerOptions::budget)
  Warmup warmup;
  /// After forwarding a stop signal (or SIGTERM at --duration), how long to
  /// wait for the command before writing the summary without its exit status;
  /// the watch still waits for the command before exiting.
  std::chrono::milliseconds grace = std::chrono::milliseconds(3000);
  /// With a command: stop when the command exits (false), or only once every
  /// process of its tree is gone (true, --until=tree): descendants that outlive
  /// it, and those orphaned before the first sample, which the child subreaper
  /// makes children of the watch.
  bool until_tree = false;
};

/// Runs the watch: starts the command (or checks the pids), samples every
/// `period` until the command exits (with until_tree: until the command and
/// every descendant are gone) / every watched process is gone /
/// `duration` passes / SIGINT or SIGTERM arrives, then prints the summary to
/// `out`, writes --summary, --plot and the rest of --out, and returns the
/// exit status: the command's (128 + N when a signal N ended it), 0 in --pid
/// mode, or a WatchExit. Messages (problems met, each once) go to `err`.
///
/// For its duration it blocks SIGINT, SIGTERM and SIGCHLD in the calling
/// thread (the caller must be single-threaded, as the CLI is) and, with a
/// command, makes this process a child subreaper (PR_SET_CHILD_SUBREAPER) so
/// that descendants orphaned inside the tree stay visible; both are restored
/// before it returns. With a command it reaps every child of the calling
/// process that ends during the run (orphans of the tree are re-parented to
/// it). A SIGINT/SIGTERM sent to the watch is forwarded to the
/// command, except one the terminal sent to the whole foreground group
/// (si_code SI_KERNEL), which the command has received already.
int run(const WatchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace extmem::watch
