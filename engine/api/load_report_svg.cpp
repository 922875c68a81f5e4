// The distributions of a `tessera bench serve` run as cumulative
// distribution functions: TTFT, TPOT, ITL and end-to-end latency, one panel
// each, x in milliseconds from 0 to the largest sample, y from 0 to 1.
#include <algorithm>
#include <cstdio>

#include "engine/bench/svg_text.h"
#include "tessera/load_bench.h"

namespace tessera {

namespace {

constexpr double kPanelW = 420, kPanelH = 260, kMargin = 50;

using svg::escape;
using svg::fmt;

// One panel at (x0, y0): axes, 5 ticks a side, the CDF as a step polyline.
std::string panel(double x0, double y0, const std::string& title, std::vector<double> v) {
  std::string s = "<g transform=\"translate(" + fmt("%.0f", x0) + "," + fmt("%.0f", y0) + ")\">\n";
  const double w = kPanelW - 2 * kMargin, h = kPanelH - 2 * kMargin;
  s += "<text x=\"" + fmt("%.0f", kPanelW / 2) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" + escape(title) + " (n = " +
       std::to_string(v.size()) + ")</text>\n";
  s += "<rect x=\"" + fmt("%.0f", kMargin) + "\" y=\"" + fmt("%.0f", kMargin) + "\" width=\"" + fmt("%.0f", w) + "\" height=\"" +
       fmt("%.0f", h) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  std::sort(v.begin(), v.end());
  const double xmax = v.empty() || v.back() <= 0 ? 1.0 : v.back();
  for (int t = 0; t <= 4; ++t) {
    const double fx = kMargin + w * t / 4, fy = kMargin + h - h * t / 4;
    s += "<text x=\"" + fmt("%.1f", fx) + "\" y=\"" + fmt("%.1f", kMargin + h + 16) + "\" text-anchor=\"middle\" font-size=\"10\">" +
         fmt("%.4g", xmax * t / 4) + "</text>\n";
    s += "<text x=\"" + fmt("%.1f", kMargin - 6) + "\" y=\"" + fmt("%.1f", fy + 3) + "\" text-anchor=\"end\" font-size=\"10\">" +
         fmt("%.2f", t / 4.0) + "</text>\n";
  }
  s += "<text x=\"" + fmt("%.0f", kPanelW / 2) + "\" y=\"" + fmt("%.0f", kPanelH - 8) +
       "\" text-anchor=\"middle\" font-size=\"11\">ms</text>\n";
  if (!v.empty()) {
    s += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"";
    auto point = [&](double x, double p) {
      s += fmt("%.1f", kMargin + w * x / xmax) + "," + fmt("%.1f", kMargin + h - h * p) + " ";
    };
    point(0, 0);
    for (size_t i = 0; i < v.size(); ++i) {
      point(v[i], (double)i / (double)v.size());
      point(v[i], (double)(i + 1) / (double)v.size());
    }
    s += "\"/>\n";
  }
  return s + "</g>\n";
}

}  // namespace

std::string load_report_svg(const LoadReport& r) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", 2 * kPanelW) + "\" height=\"" +
                   fmt("%.0f", 2 * kPanelH + 30) + "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"10\" y=\"20\" font-size=\"13\">tessera bench serve: " + escape(r.target) + "</text>\n";
  s += panel(0, 30, "TTFT", r.ttft_samples);
  s += panel(kPanelW, 30, "TPOT", r.tpot_samples);
  s += panel(0, 30 + kPanelH, "ITL", r.itl_samples);
  s += panel(kPanelW, 30 + kPanelH, "end-to-end latency", r.e2el_samples);
  return s + "</svg>\n";
}

}  // namespace tessera
