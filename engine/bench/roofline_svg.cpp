// roofline_svg: the roofline as a plain SVG, written by hand (no plotting
// dependency): log-log axes of FLOP/byte and GFLOP/s with a line a decade,
// the read roof's slope, a horizontal line per compute roof, a point per op
// kind and phase, labelled with its share of the roof above it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/bench/roofline.h"
#include "engine/bench/svg_text.h"

namespace tessera {

namespace {

constexpr double kWidth = 1100, kHeight = 720;
constexpr double kLeft = 80, kRight = 260, kTop = 50, kBottom = 190;  // room for axis labels, roof names, the notes below
constexpr double kLabelGap = 14;  // least vertical distance between two point labels that would overlap

using svg::escape;
using svg::fmt;

// A log10 axis over whole decades.
struct LogAxis {
  double lo, hi;       // decades (log10)
  double p0, p1;       // pixels at lo and hi
  double at(double v) const { return p0 + (std::log10(v) - lo) / (hi - lo) * (p1 - p0); }
};

std::string text(double x, double y, const std::string& s, const std::string& extra = "") {
  return "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y) + "\" " + extra + ">" + escape(s) + "</text>\n";
}

std::string line(double x0, double y0, double x1, double y1, const char* style) {
  return "<line x1=\"" + fmt("%.1f", x0) + "\" y1=\"" + fmt("%.1f", y0) + "\" x2=\"" + fmt("%.1f", x1) + "\" y2=\"" +
         fmt("%.1f", y1) + "\" " + style + "/>\n";
}

}  // namespace

std::string roofline_svg(const Roofline& r) {
  const double read = r.roofs.read_GBps;
  double peak = 0, i_lo = 1e300, i_hi = 0, g_lo = 1e300;
  for (const ComputeRoof& c : r.roofs.compute) peak = std::max(peak, c.GFLOPs);
  for (const RooflinePoint& p : r.points) {
    if (p.flops <= 0 || p.time_us <= 0) continue;
    i_lo = std::min(i_lo, p.intensity()), i_hi = std::max(i_hi, p.intensity()), g_lo = std::min(g_lo, p.gflops());
  }
  if (read > 0 && peak > 0) i_hi = std::max(i_hi, peak / read);
  if (i_hi <= 0) i_lo = 0.1, i_hi = 10, g_lo = 1;  // nothing to place: an empty frame
  if (peak <= 0) peak = 1;
  const LogAxis x{std::floor(std::log10(i_lo)), std::ceil(std::log10(i_hi) + 0.3), kLeft, kWidth - kRight};
  // A decade below the lowest point: room for the labels pushed down where points crowd.
  const LogAxis y{std::floor(std::log10(std::min(g_lo, read > 0 ? read * i_lo : g_lo))) - 1, std::ceil(std::log10(peak) + 0.3),
                  kHeight - kBottom, kTop};
  const double x_min = std::pow(10, x.lo), x_max = std::pow(10, x.hi);

  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", kWidth) + "\" height=\"" +
                  fmt("%.0f", kHeight) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += text(kLeft, 20, "Roofline: " + r.model, "font-size=\"14\"");
  s += text(kLeft, 38, std::to_string(r.threads) + " threads; a decode step at context " + std::to_string(r.prompt_tokens + 1) +
                           ", a prefill of " + std::to_string(r.prompt_tokens) + " tokens; the unfused graph's ops");
  for (double d = x.lo; d <= x.hi; ++d) {
    const double px = x.at(std::pow(10, d));
    s += line(px, y.p1, px, y.p0, "stroke=\"#ddd\"");
    s += text(px, y.p0 + 16, fmt("%g", std::pow(10, d)), "text-anchor=\"middle\"");
  }
  for (double d = y.lo; d <= y.hi; ++d) {
    const double py = y.at(std::pow(10, d));
    s += line(x.p0, py, x.p1, py, "stroke=\"#ddd\"");
    s += text(x.p0 - 6, py + 4, fmt("%g", std::pow(10, d)), "text-anchor=\"end\"");
  }
  s += text((x.p0 + x.p1) / 2, y.p0 + 36, "arithmetic intensity (FLOP / byte)", "text-anchor=\"middle\"");
  s += text(20, (y.p0 + y.p1) / 2, "GFLOP/s", "transform=\"rotate(-90 20 " + fmt("%.1f", (y.p0 + y.p1) / 2) + ")\"");

  // The read roof rises until the highest compute roof; each compute roof is flat from its ridge point.
  const char* colors[] = {"#1f77b4", "#9467bd", "#d62728"};
  if (read > 0) {
    const double x_end = std::min(x_max, peak / read);
    s += line(x.at(x_min), y.at(read * x_min), x.at(x_end), y.at(read * x_end), "stroke=\"black\" stroke-width=\"2\"");
    const double x_mid = std::sqrt(x_min * x_end);
    s += text(x.at(x_mid) - 6, y.at(read * x_mid) - 6, "read " + fmt("%.1f", read) + " GB/s", "text-anchor=\"end\"");
  }
  for (const ComputeRoof& c : r.roofs.compute) {
    if (c.GFLOPs <= 0) continue;
    const double x0 = read > 0 ? std::max(x_min, c.GFLOPs / read) : x_min;
    const std::string style = std::string("stroke=\"") + colors[(int)c.dtype] + "\" stroke-width=\"2\" stroke-dasharray=\"6 3\"";
    s += line(x.at(x0), y.at(c.GFLOPs), x.p1, y.at(c.GFLOPs), style.c_str());
    s += text(x.p1 + 6, y.at(c.GFLOPs) + 4,
              std::string(name(c.dtype)) + " " + fmt("%.0f", c.GFLOPs) + " GFLOP/s (" + c.kernel + ")", 
              std::string("fill=\"") + colors[(int)c.dtype] + "\"");
  }

  // Points, labelled with their share of the roof at their intensity (the
  // read slope or their dtype's roof); labels pushed apart where they would
  // overlap, each joined to its point by a thin line.
  struct Label {
    double px, py, ly;
    std::string text, color;
  };
  std::vector<Label> labels;
  std::vector<std::string> movement_only;
  for (const RooflinePoint& p : r.points) {
    if (p.flops <= 0 || p.time_us <= 0) {
      movement_only.push_back(p.op + " (" + p.phase + ") " + fmt("%.2f", p.gbps()) + " GB/s");
      continue;
    }
    const std::string color = p.phase == "decode" ? "#2ca02c" : "#ff7f0e";
    const double px = x.at(p.intensity()), py = y.at(p.gflops());
    const double compute_roof = r.roofs.of(p.compute).GFLOPs;
    double attainable = read > 0 ? read * p.intensity() : compute_roof;
    if (compute_roof > 0) attainable = std::min(attainable, compute_roof);
    const std::string share = attainable > 0 ? ", " + fmt("%.0f", 100 * p.gflops() / attainable) + " % of roof" : "";
    s += "<circle cx=\"" + fmt("%.1f", px) + "\" cy=\"" + fmt("%.1f", py) + "\" r=\"5\" fill=\"" + color + "\"><title>" +
         escape(p.op + " " + p.phase + ": " + fmt("%.3g", p.gflops()) + " GFLOP/s, " + fmt("%.3g", p.gbps()) + " GB/s") +
         "</title></circle>\n";
    labels.push_back({px, py, py + 4, p.op + " (" + p.phase + share + ")", color});
  }
  std::sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.ly < b.ly; });
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (std::abs(labels[i].px - labels[j].px) < 240 && labels[i].ly < labels[j].ly + kLabelGap) labels[i].ly = labels[j].ly + kLabelGap;
  for (const Label& l : labels) {
    const double lx = l.px + 14;
    s += line(l.px + 5, l.py, lx - 2, l.ly - 4, ("stroke=\"" + l.color + "\" stroke-width=\"0.5\"").c_str());
    s += text(lx, l.ly, l.text, "fill=\"" + l.color + "\"");
  }
  double legend_y = y.p0 + 56;
  s += "<circle cx=\"" + fmt("%.1f", kLeft) + "\" cy=\"" + fmt("%.1f", legend_y - 4) + "\" r=\"5\" fill=\"#2ca02c\"/>\n";
  s += text(kLeft + 10, legend_y, "decode step");
  s += "<circle cx=\"" + fmt("%.1f", kLeft + 120) + "\" cy=\"" + fmt("%.1f", legend_y - 4) + "\" r=\"5\" fill=\"#ff7f0e\"/>\n";
  s += text(kLeft + 130, legend_y, "prefill step (each point: every call of the op kind in one step)");
  if (!movement_only.empty()) {
    legend_y += 20;
    s += text(kLeft, legend_y, "data movement only (no FLOPs, not placed):");
    for (const std::string& m : movement_only) s += text(kLeft + 290, legend_y, m), legend_y += 16;
  }
  if (!r.not_timed.empty()) {
    std::string names;
    for (const std::string& n : r.not_timed) names += (names.empty() ? "" : ", ") + n;
    s += text(kLeft, legend_y + 8, "not timed (no op bench row): " + names);
  }
  s += "</svg>\n";
  return s;
}

}  // namespace tessera
