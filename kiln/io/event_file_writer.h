// EventFileWriter: TensorBoard event files (events.out.tfevents.*), as TensorFlow's summary
// writers make them: TFRecord-framed Event protocol buffers, the first one naming the format
// ("brain.Event:2"), then scalars, histograms and graphs, each with its wall time and step.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kiln::io {

/// One node of a graph for TensorBoard's graph dashboard (a NodeDef).
struct GraphNode {
  std::string name;  // unique in the graph; TensorBoard nests names at '/'
  std::string op;
  std::vector<std::string> inputs;                          // names of the nodes it reads
  std::vector<std::pair<std::string, std::string>> attrs;  // shown in the node's info card
};

/// Writes one event file in `log_dir`; TensorBoard reads the directory as one run.
class EventFileWriter {
 public:
  /// Creates `log_dir` (and its parents) and in it
  /// events.out.tfevents.<unix seconds>.<host>.<pid>.<n>.v2 (TensorFlow 2's name; <n> keeps two
  /// writers of one process apart; the first free one), and writes the file_version event. Throws IOError naming
  /// the path when the directory or file cannot be made.
  explicit EventFileWriter(const std::string& log_dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /// A scalar (Summary.Value.simple_value, which every TensorBoard reads) at `step`.
  void add_scalar(const std::string& tag, double value, int64_t step);
  /// A histogram of `values` (HistogramProto: min, max, num, sum, sum of squares, and 30
  /// equal-width buckets between min and max, as tf.summary.histogram makes them).
  void add_histogram(const std::string& tag, std::span<const double> values, int64_t step);
  /// A graph (Event.graph_def, a serialized GraphDef) for the graph dashboard.
  void add_graph(const std::vector<GraphNode>& nodes, int64_t step = 0);
  /// Pushes what was written to the file (TensorBoard reads files while they grow).
  void flush();
  /// Flushes and closes; throws IOError if that fails. The destructor closes quietly.
  void close();

  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& serialized_event);

  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
};

}  // namespace kiln::io
