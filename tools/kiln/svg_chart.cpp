// SVG line charts: a fixed 520x280 frame, linear axes over the data's range, a colour per series.
#include "tools/kiln/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace kiln::cli {
namespace {

constexpr double kWidth = 520, kHeight = 280;
constexpr double kLeft = 70, kRight = 20, kTop = 28, kBottom = 45;
constexpr std::array<const char*, 6> kColors = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};

std::string number(double v, const char* format = "%.4g") {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// [lo, hi] over every series' values of one coordinate, widened around a single value (one
// epoch logged, a constant learning rate) so the point lands inside the frame.
std::pair<double, double> range(const Chart& chart, bool y) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const ChartSeries& s : chart.series)
    for (const auto& p : s.points) {
      lo = std::min(lo, y ? p.second : p.first);
      hi = std::max(hi, y ? p.second : p.first);
    }
  if (lo > hi) return {0, 1};
  if (lo == hi) {
    const double pad = lo != 0 ? 0.5 * std::abs(lo) : 1.0;
    return {lo - pad, hi + pad};
  }
  if (y) return {lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)};
  return {lo, hi};
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svg_line_chart(const Chart& chart) {
  const auto [x0, x1] = range(chart, /*y=*/false);
  const auto [y0, y1] = range(chart, /*y=*/true);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * plot_w; };
  auto py = [&](double y) { return kTop + (1 - (y - y0) / (y1 - y0)) * plot_h; };
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"" << html_escape(chart.title)
     << "\" width=\"" << kWidth << "\" height=\"" << kHeight << "\" viewBox=\"0 0 " << kWidth << ' ' << kHeight
     << "\">\n";
  // Frame, then the ranges at the axes' ends (the values are what a reader compares).
  os << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << plot_w << "\" height=\"" << plot_h
     << "\" fill=\"none\" stroke=\"#999\"/>\n";
  os << "<text x=\"" << kLeft - 6 << "\" y=\"" << kTop + 4 << "\" text-anchor=\"end\">" << number(y1) << "</text>\n"
     << "<text x=\"" << kLeft - 6 << "\" y=\"" << kTop + plot_h << "\" text-anchor=\"end\">" << number(y0) << "</text>\n"
     << "<text x=\"" << kLeft << "\" y=\"" << kTop + plot_h + 16 << "\">" << number(x0) << "</text>\n"
     << "<text x=\"" << kLeft + plot_w << "\" y=\"" << kTop + plot_h + 16 << "\" text-anchor=\"end\">" << number(x1)
     << "</text>\n"
     << "<text x=\"" << kLeft + plot_w / 2 << "\" y=\"" << kHeight - 8 << "\" text-anchor=\"middle\">"
     << html_escape(chart.x_label) << "</text>\n";
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& s = chart.series[i];
    const char* color = kColors[i % kColors.size()];
    os << "<polyline class=\"series\" data-series=\"" << html_escape(s.label) << "\" data-points=\""
       << s.points.size() << "\" fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (size_t k = 0; k < s.points.size(); ++k)
      os << (k ? " " : "") << number(px(s.points[k].first), "%.2f") << ',' << number(py(s.points[k].second), "%.2f");
    os << "\"/>\n";
    for (const auto& [x, y] : s.points)
      os << "<circle cx=\"" << number(px(x), "%.2f") << "\" cy=\"" << number(py(y), "%.2f") << "\" r=\"3\" fill=\""
         << color << "\"><title>" << html_escape(s.label) << ' ' << number(x) << ": " << number(y, "%.6g")
         << "</title></circle>\n";
    // The legend runs along the top margin, clear of the lines.
    os << "<text x=\"" << kLeft + 110 * static_cast<double>(i) << "\" y=\"" << kTop - 9 << "\" fill=\"" << color
       << "\">" << html_escape(s.label) << "</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace kiln::cli
