// `extmem watch --plot=FILE.svg`: RSS and mapping count over time, one line
// per process, as a small self-contained SVG (no scripts, no external fonts or
// files). Written by hand rather than through a plotting library: Debian's
// candidates either are programs a user may not have (gnuplot) or pull in far
// more than two line charts need (PLplot, cairo), and GNU libplot is unmaintained.
#pragma once

#include <string>

#include "extmem/core/error.h"
#include "extmem/watch/summary.h"

namespace extmem::watch {

struct PlotOptions {
  std::string title;  ///< first line of the figure (the command or the pids)
  int width = 1040;   ///< pixels
  int height = 640;   ///< pixels
  /// Most points drawn per line: longer series are thinned per pixel column,
  /// keeping each column's first, lowest, highest and last point, so spikes survive.
  int max_points_per_line = 4000;
};

/// The SVG document (XML 1.0, UTF-8; every text is escaped and reduced to
/// printable ASCII): two panels sharing the time axis (top: VmRSS in MiB;
/// bottom: mapping count, drawn through the samples where it was counted),
/// one colour per process (ten colours, then dashed, then dotted), and a
/// legend "pid command line" (at most 24 entries; the largest peak RSS first).
std::string svg_plot(const History& history, const PlotOptions& options);

/// Writes svg_plot() to `path` through PATH.tmp and rename(2), so a reader
/// never sees half a file. Errors: os_error("open|write|rename PATH", errno).
Status write_svg_plot(const std::string& path, const History& history, const PlotOptions& options);

}  // namespace extmem::watch
