// TraceRecorder: timed events in the Chrome Trace Event Format (chrome://tracing and Perfetto
// open it), recorded while a TraceSession is on: compiler passes, every kernel of every step
// per thread, input-pipeline stages, and the trainer's wait for input.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace kiln {

/// One complete ("ph": "X") event.
struct TraceEvent {
  std::string name;      // kernel label, pass name, pipeline stage, ...
  std::string category;  // "compile", "kernel", "input", "step"
  int64_t start_ns = 0;  // since the session began
  int64_t duration_ns = 0;
  int tid = 0;           // small per-session thread number, 0 for the first thread seen
  std::string detail;    // shown in the event's args: source layer, program name, ...
  int64_t bytes = -1;    // bytes the event read and wrote, when known (-1: unknown)
  int64_t flops = -1;    // floating-point operations, when known
};

/// One kernel label's totals over a set of events (a row of the slowest-kernels table).
struct KernelStats {
  std::string name;
  int64_t calls = 0, total_ns = 0, bytes = 0, flops = 0;
  bool has_bytes = true, has_flops = true;  // every call carried its bytes / nonzero flops
  /// "12.3 GFLOP/s" when the flops are known, else "4.5 GB/s" when the bytes are, else "-".
  std::string rate() const;
};

/// The category "kernel" events grouped by name, the largest total time first.
std::vector<KernelStats> kernel_stats(const std::vector<TraceEvent>& events);

class TraceRecorder {
 public:
  TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  /// Steady-clock nanoseconds (the time base of add()).
  static int64_t now_ns();

  /// Records an event that ran from `start_ns` to `end_ns` (now_ns() values) on the calling
  /// thread. Thread-safe.
  void add(std::string_view name, std::string_view category, int64_t start_ns, int64_t end_ns,
           std::string detail = "", int64_t bytes = -1, int64_t flops = -1);

  std::vector<TraceEvent> events() const;
  /// {"traceEvents": [...], "displayTimeUnit": "ms"}: ts and dur in microseconds, pid 1, one
  /// tid per thread, args {detail, bytes, flops} where known; thread names as metadata events.
  std::string chrome_trace_json() const;
  /// Writes chrome_trace_json() to `path` (parents created); IOError naming the path on failure.
  void write_chrome_trace(const std::string& path) const;
  /// The `top` kernels (category "kernel") by total time: calls, total and mean time, share of
  /// all kernel time, and GFLOP/s or GB/s where the events carry flops or bytes.
  std::string kernel_summary(int top = 20) const;

 private:
  int64_t origin_ns_;
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
  std::map<std::thread::id, int> tids_;
};

/// Turns a recorder on for its lifetime, as tf.profiler.experimental.start()/stop() do. One
/// session at a time per process (a second is a ValueError): kernels, pipeline threads and the
/// compiler all report to it without being handed it.
class TraceSession {
 public:
  TraceSession();
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;
  TraceRecorder& recorder() { return recorder_; }

 private:
  TraceRecorder recorder_;
};

/// The recorder of the session in progress (null when none) for this object's lifetime: a
/// session ending waits for every ActiveRecorder holding it, so pipeline and kernel threads
/// never write into a finished one. Without a session this is one relaxed atomic load.
class ActiveRecorder {
 public:
  ActiveRecorder();
  ~ActiveRecorder();
  ActiveRecorder(const ActiveRecorder&) = delete;
  ActiveRecorder& operator=(const ActiveRecorder&) = delete;
  TraceRecorder* get() const { return recorder_; }

 private:
  TraceRecorder* recorder_ = nullptr;
};

/// Times its scope into the active recorder, if there is one when it starts.
class TraceScope {
 public:
  /// Without a session this costs one relaxed load: nothing is copied (pipeline stages time
  /// every element with one).
  TraceScope(std::string_view category, std::string_view name, std::string_view detail = {}) {
    if (active_.get() == nullptr) return;
    category_ = category;
    name_ = name;
    detail_ = detail;
    start_ns_ = TraceRecorder::now_ns();
  }
  ~TraceScope() {
    if (active_.get() != nullptr)
      active_.get()->add(name_, category_, start_ns_, TraceRecorder::now_ns(), std::move(detail_));
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  ActiveRecorder active_;
  std::string_view category_;
  std::string name_;
  std::string detail_;
  int64_t start_ns_ = 0;
};

}  // namespace kiln
