// Line charts as inline SVG for `kiln report`: drawn here, so the page needs no script and
// fetches nothing. Each series is one <polyline> whose data-points attribute (and number of
// points) is the number of values it shows, plus one <circle> per value.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::cli {

/// One line: its legend label and its (x, y) values in x order.
struct ChartSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;
};

struct Chart {
  std::string title;    // shown above the chart and in data-chart
  std::string x_label;  // "epoch", "step", ...
  std::vector<ChartSeries> series;
};

/// The chart as an <svg> element: axes with their value ranges, a legend, one polyline
/// (class "series", data-series = label, data-points = count) and circles per series.
std::string svg_line_chart(const Chart& chart);

/// `text` with &, <, >, " and ' replaced by entities, for element text and attribute values.
std::string html_escape(std::string_view text);

}  // namespace kiln::cli
