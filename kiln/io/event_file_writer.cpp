// TensorBoard event files through the generated lite messages of kiln/io/proto.
#include "kiln/io/event_file_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "kiln/core/check.h"
#include "kiln/core/crc32c.h"
#include "kiln/core/host_name.h"
#include "proto/event.pb.h"
#include "proto/graph.pb.h"

namespace kiln::io {
namespace {

namespace pb = kiln::tensorboard;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// tf.summary.histogram's default bucket count (TF 2.x summary_v2.DEFAULT_BUCKET_COUNT).
constexpr int kHistogramBuckets = 30;

}  // namespace

EventFileWriter::EventFileWriter(const std::string& log_dir) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec)
    KILN_THROW(IOError, "[EventFileWriter] cannot create the log directory ", log_dir, ": ", ec.message(),
               ". Hint: choose a log_dir you can write to.");
  // <n> is the first free number: train/ and validation/ writers, or two runs, opened in the
  // same second by one process must not share a file ("x": fail if it exists).
  const std::string stem = str_cat("events.out.tfevents.", static_cast<int64_t>(now_seconds()), ".", host_name(), ".",
                                   getpid(), ".");
  for (int n = 0; !file_ && n < 1000; ++n) {
    path_ = (std::filesystem::path(log_dir) / str_cat(stem, n, ".v2")).string();
    file_.reset(std::fopen(path_.c_str(), "wbx"));
    if (!file_ && errno != EEXIST) break;
  }
  if (!file_)
    KILN_THROW(IOError, "[EventFileWriter] ", path_, ": cannot create: ", std::strerror(errno),
               ". Hint: check the log directory is writable.");
  pb::Event event;
  event.set_wall_time(now_seconds());
  event.set_file_version("brain.Event:2");
  write_record(event.SerializeAsString());
  flush();
}

EventFileWriter::~EventFileWriter() = default;

void EventFileWriter::write_record(const std::string& record) {
  if (!file_) KILN_THROW(ValueError, "[EventFileWriter] ", path_, ": written to after close().");
  const TFRecordFrame frame = tfrecord_frame(record);
  if (std::fwrite(frame.header, 1, 12, file_.get()) != 12 ||
      std::fwrite(record.data(), 1, record.size(), file_.get()) != record.size() ||
      std::fwrite(frame.footer, 1, 4, file_.get()) != 4)
    KILN_THROW(IOError, "[EventFileWriter] ", path_, ": write failed: ", std::strerror(errno),
               ". Hint: check the disk has space.");
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  pb::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  pb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_record(event.SerializeAsString());
}

void EventFileWriter::add_histogram(const std::string& tag, std::span<const double> values, int64_t step) {
  pb::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  pb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  pb::HistogramProto* h = v->mutable_histo();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0, sum_squares = 0;
  for (double x : values) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
    sum_squares += x * x;
  }
  h->set_num(static_cast<double>(values.size()));
  h->set_sum(sum);
  h->set_sum_squares(sum_squares);
  if (values.empty()) {
    write_record(event.SerializeAsString());
    return;
  }
  h->set_min(lo);
  h->set_max(hi);
  // Bucket i holds [min + i * width, min + (i + 1) * width), the last one closed at max; all
  // values equal make one bucket. This is tf.summary.histogram's rule.
  const int buckets = hi > lo ? kHistogramBuckets : 1;
  const double width = (hi - lo) / buckets;
  std::vector<double> counts(static_cast<size_t>(buckets), 0.0);
  for (double x : values) {
    int b = width > 0 ? static_cast<int>(std::floor((x - lo) / width)) : 0;
    counts[static_cast<size_t>(std::clamp(b, 0, buckets - 1))] += 1;
  }
  for (int b = 0; b < buckets; ++b) {
    h->add_bucket_limit(b == buckets - 1 ? hi : lo + width * (b + 1));
    h->add_bucket(counts[static_cast<size_t>(b)]);
  }
  write_record(event.SerializeAsString());
}

void EventFileWriter::add_graph(const std::vector<GraphNode>& nodes, int64_t step) {
  pb::GraphDef graph;
  for (const GraphNode& n : nodes) {
    pb::NodeDef* node = graph.add_node();
    node->set_name(n.name);
    node->set_op(n.op);
    for (const std::string& input : n.inputs) node->add_input(input);
    for (const auto& [key, value] : n.attrs) (*node->mutable_attr())[key].set_s(value);
  }
  // TensorFlow's producer version for graphs written by TF 2.15 (the graph plugin only shows it).
  graph.mutable_versions()->set_producer(1645);
  pb::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  event.set_graph_def(graph.SerializeAsString());
  write_record(event.SerializeAsString());
}

void EventFileWriter::flush() {
  if (file_ && std::fflush(file_.get()) != 0)
    KILN_THROW(IOError, "[EventFileWriter] ", path_, ": flush failed: ", std::strerror(errno), ".");
}

void EventFileWriter::close() {
  if (!file_) return;
  std::FILE* f = file_.release();
  if (std::fclose(f) != 0) KILN_THROW(IOError, "[EventFileWriter] ", path_, ": close failed: ", std::strerror(errno), ".");
}

}  // namespace kiln::io
