// TraceRecorder: the event list, the Chrome trace writer and the kernel summary.
#include "kiln/core/trace_recorder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/core/check.h"

namespace kiln {
namespace {

// The one process-wide profiling switch, like TensorFlow's profiler singleton: a session sets
// it, instrumented code reads it. Null (the usual case) costs one load per event site.
std::atomic<TraceRecorder*> g_active{nullptr};
// ActiveRecorders that may hold g_active's recorder; a session ends once this drops to 0.
std::atomic<int> g_holders{0};

void append_json_string(std::ostringstream& os, std::string_view s) {
  os << '"';
  for (char c : s) {
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\n': os << "\\n"; break;
      case '\t': os << "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          os << buf;
        } else {
          os << c;
        }
    }
  }
  os << '"';
}

}  // namespace

TraceRecorder::TraceRecorder() : origin_ns_(now_ns()) {}

ActiveRecorder::ActiveRecorder() {
  if (g_active.load(std::memory_order_relaxed) == nullptr) return;
  // Count ourselves in, then look again: a session that ended in between is seen as null here
  // (both sides are sequentially consistent), so its recorder is never touched.
  g_holders.fetch_add(1);
  recorder_ = g_active.load();
  if (recorder_ == nullptr) g_holders.fetch_sub(1);
}

ActiveRecorder::~ActiveRecorder() {
  if (recorder_ != nullptr) g_holders.fetch_sub(1);
}

int64_t TraceRecorder::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void TraceRecorder::add(std::string_view name, std::string_view category, int64_t start_ns, int64_t end_ns,
                        std::string detail, int64_t bytes, int64_t flops) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = tids_.try_emplace(std::this_thread::get_id(), static_cast<int>(tids_.size()));
  events_.push_back({.name = std::string(name), .category = std::string(category), .start_ns = start_ns - origin_ns_,
                     .duration_ns = std::max<int64_t>(end_ns - start_ns, 0), .tid = it->second,
                     .detail = std::move(detail), .bytes = bytes, .flops = flops});
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

std::string TraceRecorder::chrome_trace_json() const {
  std::vector<TraceEvent> events = this->events();
  int threads = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    threads = static_cast<int>(tids_.size());
  }
  std::ostringstream os;
  os.precision(3);
  os << std::fixed << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  os << R"({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "kiln"}})";
  for (int t = 0; t < threads; ++t)
    os << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": " << t
       << ", \"args\": {\"name\": \"" << (t == 0 ? "main" : "thread " + std::to_string(t)) << "\"}}";
  for (const TraceEvent& e : events) {
    os << ",\n{\"name\": ";
    append_json_string(os, e.name);
    os << ", \"cat\": ";
    append_json_string(os, e.category);
    os << ", \"ph\": \"X\", \"ts\": " << static_cast<double>(e.start_ns) / 1000.0
       << ", \"dur\": " << static_cast<double>(e.duration_ns) / 1000.0 << ", \"pid\": 1, \"tid\": " << e.tid
       << ", \"args\": {";
    const char* sep = "";
    if (!e.detail.empty()) {
      os << "\"detail\": ";
      append_json_string(os, e.detail);
      sep = ", ";
    }
    if (e.bytes >= 0) {
      os << sep << "\"bytes\": " << e.bytes;
      sep = ", ";
    }
    if (e.flops >= 0) os << sep << "\"flops\": " << e.flops;
    os << "}}";
  }
  os << "\n]}\n";
  return os.str();
}

void TraceRecorder::write_chrome_trace(const std::string& path) const {
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream out(path, std::ios::trunc);
  out << chrome_trace_json();
  out.close();
  if (ec || !out)
    KILN_THROW(IOError, "[TraceRecorder] cannot write the trace ", path, ec ? ": " + ec.message() : std::string(),
               ". Hint: choose a directory you can write to.");
}

std::vector<KernelStats> kernel_stats(const std::vector<TraceEvent>& events) {
  std::map<std::string, KernelStats> rows;
  for (const TraceEvent& e : events) {
    if (e.category != "kernel") continue;
    KernelStats& r = rows[e.name];
    r.name = e.name;
    ++r.calls;
    r.total_ns += e.duration_ns;
    r.bytes += std::max<int64_t>(e.bytes, 0);
    r.flops += std::max<int64_t>(e.flops, 0);
    r.has_bytes = r.has_bytes && e.bytes >= 0;
    r.has_flops = r.has_flops && e.flops > 0;
  }
  std::vector<KernelStats> sorted;
  for (auto& [name, r] : rows) sorted.push_back(r);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const KernelStats& a, const KernelStats& b) { return a.total_ns > b.total_ns; });
  return sorted;
}

std::string KernelStats::rate() const {
  const double seconds = static_cast<double>(total_ns) / 1e9;
  char rate[32] = "-";
  if (seconds > 0 && has_flops)
    std::snprintf(rate, sizeof rate, "%.1f GFLOP/s", static_cast<double>(flops) / seconds / 1e9);
  else if (seconds > 0 && has_bytes)
    std::snprintf(rate, sizeof rate, "%.1f GB/s", static_cast<double>(bytes) / seconds / 1e9);
  return rate;
}

std::string TraceRecorder::kernel_summary(int top) const {
  const std::vector<KernelStats> sorted = kernel_stats(events());
  int64_t total_ns = 0;
  for (const KernelStats& r : sorted) total_ns += r.total_ns;
  std::ostringstream os;
  os << "kernels: " << sorted.size() << " distinct, " << static_cast<double>(total_ns) / 1e6 << " ms in all\n";
  char line[160];
  std::snprintf(line, sizeof line, "%8s %10s %10s %7s %12s  %s\n", "calls", "total ms", "mean us", "share", "rate",
                "kernel");
  os << line;
  for (size_t i = 0; i < sorted.size() && static_cast<int>(i) < top; ++i) {
    const KernelStats& r = sorted[i];
    std::snprintf(line, sizeof line, "%8lld %10.3f %10.2f %6.1f%% %12s  ", static_cast<long long>(r.calls),
                  static_cast<double>(r.total_ns) / 1e6,
                  static_cast<double>(r.total_ns) / 1e3 / static_cast<double>(r.calls),
                  total_ns > 0 ? 100.0 * static_cast<double>(r.total_ns) / static_cast<double>(total_ns) : 0.0,
                  r.rate().c_str());
    os << line << r.name << "\n";
  }
  return os.str();
}

TraceSession::TraceSession() {
  TraceRecorder* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, &recorder_))
    KILN_THROW(ValueError, "[TraceSession] a profiling session is already running in this process. Hint: profile "
               "one window at a time (one Profiler callback, or KILN_PROFILE, not both).");
}

TraceSession::~TraceSession() {
  g_active.store(nullptr);
  while (g_holders.load() != 0) std::this_thread::yield();  // events in flight on other threads
}

}  // namespace kiln
