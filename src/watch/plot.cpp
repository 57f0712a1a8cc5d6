#include "extmem/watch/plot.h"

#include "extmem/os/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <functional>

#include <fmt/format.h>

#include "extmem/os/fd.h"
#include "core/xml_text.h"

namespace extmem::watch {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr std::size_t kLegendMax = 24;


// A "nice" tick step (1, 2 or 5 times a power of ten) for about `count` ticks over `range`.
double nice_step(double range, int count) {
  if (!(range > 0)) return 1;
  const double raw = range / count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

struct Range {
  double lo = 0, hi = 1;
};

// Value range for a panel: from 0 when the data sit far above it, else the data's own band, padded.
Range value_range(double lo, double hi) {
  if (!(hi >= lo)) return {0, 1};
  if (lo < 0.3 * hi) lo = 0;
  if (hi - lo < 1e-9) {
    const double pad = std::max(1.0, std::abs(hi) * 0.05);
    return {std::max(0.0, lo - pad), hi + pad};
  }
  const double pad = (hi - lo) * 0.05;
  return {lo == 0 ? 0 : std::max(0.0, lo - pad), hi + pad};
}

std::string tick_label(double v, double step) {
  if (step >= 1) return fmt::format("{:.0f}", v);
  const int decimals = std::min(6, static_cast<int>(std::ceil(-std::log10(step))));
  return fmt::format("{:.{}f}", v, decimals);
}

struct Panel {
  double x, y, w, h;  // plot area in pixels
  Range xr, yr;
  double px(double t) const { return x + (t - xr.lo) / (xr.hi - xr.lo) * w; }
  double py(double v) const { return y + h - (v - yr.lo) / (yr.hi - yr.lo) * h; }
};

// Thins a series to at most ~4 points per pixel column (first, lowest, highest, last).
std::vector<std::pair<double, double>> thin(const std::vector<std::pair<double, double>>& pts, const Panel& p,
                                            std::size_t limit) {
  if (pts.size() <= limit) return pts;
  std::vector<std::pair<double, double>> out;
  std::size_t i = 0;
  while (i < pts.size()) {
    const long col = std::lround(p.px(pts[i].first));
    std::size_t j = i, lo = i, hi = i;
    while (j < pts.size() && std::lround(p.px(pts[j].first)) == col) {
      if (pts[j].second < pts[lo].second) lo = j;
      if (pts[j].second > pts[hi].second) hi = j;
      ++j;
    }
    std::size_t keep[] = {i, lo, hi, j - 1};
    std::sort(std::begin(keep), std::end(keep));
    for (std::size_t k = 0; k < 4; ++k)
      if (k == 0 || keep[k] != keep[k - 1]) out.push_back(pts[keep[k]]);
    i = j;
  }
  return out;
}

void draw_axes(std::string& svg, const Panel& p, const std::string& ylabel, bool xlabels) {
  svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#fff\" stroke=\"#444\"/>\n",
                     p.x, p.y, p.w, p.h);
  const double ystep = nice_step(p.yr.hi - p.yr.lo, 5);
  for (double v = std::ceil(p.yr.lo / ystep) * ystep; v <= p.yr.hi + ystep * 1e-6; v += ystep) {
    const double y = p.py(v);
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", p.x, y,
                       p.x + p.w, y);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", p.x - 6, y + 4,
                       tick_label(v, ystep));
  }
  const double xstep = nice_step(p.xr.hi - p.xr.lo, 8);
  for (double t = std::ceil(p.xr.lo / xstep) * xstep; t <= p.xr.hi + xstep * 1e-6; t += xstep) {
    const double x = p.px(t);
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", x, p.y, x,
                       p.y + p.h);
    if (xlabels)
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x, p.y + p.h + 16,
                         tick_label(t, xstep));
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 {:.1f} {:.1f})\">{}</text>\n",
      p.x - 52, p.y + p.h / 2, p.x - 52, p.y + p.h / 2, xml_text(ylabel));
}

// Colour and dash of the i-th process: ten colours, then the same ten dashed, then dotted.
std::string stroke_of(std::size_t i) {
  const char* dash[] = {"", " stroke-dasharray=\"7 3\"", " stroke-dasharray=\"2 2\""};
  return fmt::format("stroke=\"{}\"{}", kPalette[i % std::size(kPalette)], dash[(i / std::size(kPalette)) % 3]);
}

void draw_line(std::string& svg, const Panel& p, const std::vector<std::pair<double, double>>& pts, std::size_t index,
               std::size_t limit) {
  const char* colour = kPalette[index % std::size(kPalette)];
  if (pts.empty()) return;
  if (pts.size() == 1) {
    svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n", p.px(pts[0].first),
                       p.py(pts[0].second), colour);
    return;
  }
  svg += fmt::format("<polyline fill=\"none\" {} stroke-width=\"1.5\" points=\"", stroke_of(index));
  bool first = true;
  for (const auto& [t, v] : thin(pts, p, limit)) {
    svg += fmt::format("{}{:.1f},{:.1f}", first ? "" : " ", p.px(t), p.py(v));
    first = false;
  }
  svg += "\"/>\n";
}

}  // namespace

std::string svg_plot(const History& history, const PlotOptions& o) {
  const auto& procs = history.processes();
  // Series per process.
  std::vector<std::vector<std::pair<double, double>>> rss(procs.size()), maps(procs.size());
  double t_lo = 0, t_hi = 0, r_lo = 1e300, r_hi = -1, m_lo = 1e300, m_hi = -1;
  bool any_t = false;
  std::vector<double> peak(procs.size(), 0);
  for (std::size_t i = 0; i < procs.size(); ++i) {
    for (const auto& pt : procs[i].points) {
      if (!any_t) t_lo = t_hi = pt.t;
      any_t = true;
      t_lo = std::min(t_lo, pt.t);
      t_hi = std::max(t_hi, pt.t);
      if (pt.rss_kib) {
        const double v = static_cast<double>(*pt.rss_kib) / 1024.0;
        rss[i].emplace_back(pt.t, v);
        r_lo = std::min(r_lo, v);
        r_hi = std::max(r_hi, v);
        peak[i] = std::max(peak[i], v);
      }
      if (pt.mappings) {
        const double v = static_cast<double>(*pt.mappings);
        maps[i].emplace_back(pt.t, v);
        m_lo = std::min(m_lo, v);
        m_hi = std::max(m_hi, v);
      }
    }
  }
  t_lo = std::min(t_lo, 0.0);  // the axis is time since the watch started
  if (!(t_hi > t_lo)) t_hi = t_lo + 1;

  const double W = o.width, H = o.height;
  const double left = 76, right = 300, top = 44, bottom = 44, gap = 36;
  const double ph = (H - top - bottom - gap) / 2;
  const Range xr{t_lo, t_hi};
  const Panel top_panel{left, top, W - left - right, ph, xr, value_range(r_hi < 0 ? 0 : r_lo, r_hi < 0 ? 1 : r_hi)};
  const Panel bottom_panel{left, top + ph + gap, W - left - right, ph, xr,
                           value_range(m_hi < 0 ? 0 : m_lo, m_hi < 0 ? 1 : m_hi)};

  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      o.width, o.height);
  svg += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#fafafa\"/>\n", o.width, o.height);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"22\" font-size=\"14\">{}</text>\n", left, xml_text(o.title));
  draw_axes(svg, top_panel, "VmRSS (MiB)", false);
  draw_axes(svg, bottom_panel, "mappings", true);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time since start (s)</text>\n",
                     left + (W - left - right) / 2, H - 8);
  for (std::size_t i = 0; i < procs.size(); ++i) {
    const auto limit = static_cast<std::size_t>(std::max(16, o.max_points_per_line));
    svg += fmt::format("<g><title>{} {}</title>\n", procs[i].pid,
                       xml_text(process_label(procs[i].comm, procs[i].cmdline, 200)));
    draw_line(svg, top_panel, rss[i], i, limit);
    draw_line(svg, bottom_panel, maps[i], i, limit);
    svg += "</g>\n";
  }
  // Legend, largest peak RSS first.
  std::vector<std::size_t> order(procs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return peak[a] > peak[b]; });
  const double lx = W - right + 14;
  double ly = top + 6;
  for (std::size_t k = 0; k < order.size() && k < kLegendMax; ++k) {
    const std::size_t i = order[k];
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" {} stroke-width=\"2.5\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\">{} {}</text>\n",
        lx, ly, lx + 18, ly, stroke_of(i), lx + 24, ly + 4, procs[i].pid,
        xml_text(process_label(procs[i].comm, procs[i].cmdline, 38)));
    ly += 16;
  }
  if (order.size() > kLegendMax)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">+{} more</text>\n", lx, ly + 4, order.size() - kLegendMax);
  svg += "</svg>\n";
  return svg;
}

Status write_svg_plot(const std::string& path, const History& history, const PlotOptions& options) {
  return os::write_file_atomically(path, svg_plot(history, options));
}

}  // namespace extmem::watch
