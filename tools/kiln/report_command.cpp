// `kiln report`: event files -> a chart per scalar tag (a line per run: train, validation),
// the newest step trace under plugins/profile -> step time and input wait per traced step and
// the slowest-kernels table. Everything is inline: SVG, CSS, no script.
#include "tools/kiln/report_command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/core/trace_recorder.h"
#include "kiln/io/event_file_reader.h"
#include "kiln/io/file_reader.h"
#include "tools/kiln/svg_chart.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

// run ("train", "validation", "." for the log dir itself) -> tag -> (step, value) in file order.
using RunScalars = std::map<std::string, std::map<std::string, std::vector<std::pair<double, double>>>>;

RunScalars read_runs(const std::string& log_dir) {
  std::vector<std::pair<std::string, std::string>> runs = {{".", log_dir}};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(log_dir, ec))
    if (entry.is_directory()) runs.push_back({entry.path().filename().string(), entry.path().string()});
  RunScalars scalars;
  for (const auto& [run, dir] : runs)
    for (const std::string& file : io::list_event_files(dir))
      for (const io::ScalarEvent& e : io::read_event_scalars(file))
        scalars[run][e.tag].push_back({static_cast<double>(e.step), e.value});
  return scalars;
}

// One chart per tag, a series per run that logged it; epoch_* first (the curves a reader
// looks for), then batch_* and the rest by name.
std::vector<Chart> scalar_charts(const RunScalars& runs) {
  std::map<std::string, Chart> by_tag;
  for (const auto& [run, tags] : runs)
    for (const auto& [tag, points] : tags) {
      Chart& c = by_tag[tag];
      c.title = tag;
      c.x_label = tag.starts_with("epoch_") ? "epoch" : "step";
      c.series.push_back({run, points});
    }
  std::vector<Chart> charts;
  for (bool epoch : {true, false})
    for (auto& [tag, chart] : by_tag)
      if (tag.starts_with("epoch_") == epoch) charts.push_back(chart);
  return charts;
}

// The newest <log_dir>/plugins/profile/<run>/*.trace.json (run names are timestamps), or "".
std::string newest_trace(const std::string& log_dir) {
  std::vector<std::string> traces;
  std::error_code ec;
  for (const auto& run : fs::directory_iterator(fs::path(log_dir) / "plugins" / "profile", ec))
    for (const auto& entry : fs::directory_iterator(run.path(), ec))
      if (entry.path().filename().string().ends_with(".trace.json")) traces.push_back(entry.path().string());
  std::sort(traces.begin(), traces.end());
  return traces.empty() ? "" : traces.back();
}

// The complete ("X") events of a Chrome trace TraceRecorder wrote, back in nanoseconds.
std::vector<TraceEvent> read_trace(const std::string& path) {
  std::vector<TraceEvent> events;
  try {
    const nlohmann::json trace = nlohmann::json::parse(io::read_file(path));
    if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
      KILN_THROW(IOError, "[", path, "] has no traceEvents array. Hint: pass a trace the Profiler or KILN_PROFILE wrote.");
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("ph", "") != "X") continue;
      const auto& args = e.value("args", nlohmann::json::object());
      events.push_back({.name = e.value("name", ""), .category = e.value("cat", ""),
                        .start_ns = std::llround(e.value("ts", 0.0) * 1000),
                        .duration_ns = std::llround(e.value("dur", 0.0) * 1000), .tid = e.value("tid", 0),
                        .detail = args.value("detail", ""), .bytes = args.value("bytes", int64_t{-1}),
                        .flops = args.value("flops", int64_t{-1})});
    }
  } catch (const nlohmann::json::exception& e) {
    KILN_THROW(IOError, "[", path, "] is not a Chrome trace Kiln can read: ", e.what(),
               ". Hint: the trace was cut off or edited; record it again.");
  }
  std::sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  return events;
}

// Each traced step's time (ms, the trainer's fit_step events) against its 1-based number.
ChartSeries step_times(const std::vector<TraceEvent>& events) {
  ChartSeries s{"step time", {}};
  for (const TraceEvent& e : events)
    if (e.name == "fit_step") s.points.push_back({static_cast<double>(s.points.size() + 1), static_cast<double>(e.duration_ns) / 1e6});
  return s;
}

// The input wait (ms) of each traced step: the input_wait events before it and after the step
// before it. The first traced step's wait came before the window opened, so it has no point.
ChartSeries input_waits(const std::vector<TraceEvent>& events) {
  std::vector<int64_t> step_starts;
  for (const TraceEvent& e : events)
    if (e.name == "fit_step") step_starts.push_back(e.start_ns);
  std::map<size_t, double> wait_ms;
  for (const TraceEvent& e : events) {
    if (e.name != "input_wait") continue;
    const size_t step = static_cast<size_t>(std::lower_bound(step_starts.begin(), step_starts.end(), e.start_ns) - step_starts.begin());
    if (step < step_starts.size()) wait_ms[step + 1] += static_cast<double>(e.duration_ns) / 1e6;
  }
  ChartSeries s{"input wait", {}};
  for (const auto& [step, ms] : wait_ms) s.points.push_back({static_cast<double>(step), ms});
  return s;
}

std::string kernel_table(const std::vector<TraceEvent>& events, size_t top) {
  const std::vector<KernelStats> rows = kernel_stats(events);
  int64_t total_ns = 0;
  for (const KernelStats& r : rows) total_ns += r.total_ns;
  std::ostringstream os;
  os.precision(3);
  os << std::fixed << "<table class=\"kernels\" data-rows=\"" << std::min(rows.size(), top) << "\">\n"
     << "<tr><th>calls</th><th>total ms</th><th>mean us</th><th>share</th><th>rate</th><th>kernel</th></tr>\n";
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const KernelStats& r = rows[i];
    os << "<tr><td>" << r.calls << "</td><td>" << static_cast<double>(r.total_ns) / 1e6 << "</td><td>"
       << static_cast<double>(r.total_ns) / 1e3 / static_cast<double>(r.calls) << "</td><td>"
       << (total_ns > 0 ? 100.0 * static_cast<double>(r.total_ns) / static_cast<double>(total_ns) : 0.0)
       << "%</td><td>" << r.rate() << "</td><td>" << html_escape(r.name) << "</td></tr>\n";
  }
  os << "</table>\n";
  return os.str();
}

void add_figure(std::ostream& html, const Chart& chart) {
  html << "<figure><figcaption>" << html_escape(chart.title) << "</figcaption>\n" << svg_line_chart(chart) << "</figure>\n";
}

}  // namespace

int report(const Args& args, std::ostream& out) {
  const std::string& log_dir = args.positional.at(0);
  if (!fs::is_directory(log_dir))
    KILN_THROW(IOError, "[", log_dir, "] is not a directory. Hint: pass the log_dir given to "
               "keras::callbacks::TensorBoard.");
  const RunScalars runs = read_runs(log_dir);
  const std::string trace_path = args.get("--trace", newest_trace(log_dir));
  if (runs.empty() && trace_path.empty())
    KILN_THROW(IOError, "[", log_dir, "] holds no TensorBoard event files (events.out.tfevents.*, in it or its run "
               "directories) and no step trace (plugins/profile/). Hint: pass the log_dir given to "
               "keras::callbacks::TensorBoard or Profiler, after a fit has run.");
  const std::string output = args.get("-o", (fs::path(log_dir) / "report.html").string());

  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Kiln report: " << html_escape(log_dir)
       << "</title>\n<style>body{font-family:sans-serif;margin:20px}figure{display:inline-block;margin:8px}"
          "svg text{font-size:12px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
          "text-align:right;white-space:nowrap}td:last-child{text-align:left;white-space:normal}</style></head>\n<body>\n<h1>Kiln report: "
       << html_escape(log_dir) << "</h1>\n<h2>Scalars</h2>\n";
  const std::vector<Chart> charts = scalar_charts(runs);
  if (charts.empty()) html << "<p>No scalars were logged.</p>\n";
  for (const Chart& chart : charts) add_figure(html, chart);
  size_t kernels = 0;
  if (!trace_path.empty()) {
    const std::vector<TraceEvent> events = read_trace(trace_path);
    html << "<h2>Traced steps</h2>\n<p>" << html_escape(trace_path) << "</p>\n";
    add_figure(html, {"step time and input wait (ms)", "traced step",
                      {step_times(events), input_waits(events)}});
    html << "<h2>Slowest kernels</h2>\n" << kernel_table(events, 20);
    kernels = kernel_stats(events).size();
  }
  html << "</body></html>\n";

  std::ofstream file(output, std::ios::trunc);
  file << html.str();
  file.close();
  if (!file)
    KILN_THROW(IOError, "[", output, "] cannot write the report. Hint: choose a writable path with -o.");
  out << output << ": " << charts.size() << " scalar charts";
  if (!trace_path.empty()) out << ", step trace " << trace_path << " (" << kernels << " kernels)";
  out << "\n";
  return 0;
}

}  // namespace kiln::cli
