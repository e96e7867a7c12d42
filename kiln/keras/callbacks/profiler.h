// Profiler: records a window of train steps as a Chrome trace (chrome://tracing, Perfetto) and
// a table of the slowest kernels: the role of TensorBoard's profile_batch in Keras.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "kiln/keras/callbacks/callback.h"

namespace kiln {
class TraceSession;
}

namespace kiln::keras {

struct ProfilerOptions {
  /// Train steps to record, {first, last}, 1-based over the fit, as Keras's profile_batch
  /// (the first steps compile and warm caches, so the default skips one).
  std::pair<int64_t, int64_t> profile_batch = {2, 3};
  /// Print the slowest-kernels table when the window closes (when fit's verbose > 0).
  bool print_summary = true;
};

/// Writes <log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json (every kernel of
/// the recorded steps on the thread that ran it, with bytes and flops; the input-pipeline
/// stages; the trainer's input waits; and a recompile's passes if one falls in the window) and
/// <host>.kernels.txt beside it. The compile before the first step is in KILN_PROFILE=<f>.json
/// traces, which cover the whole fit. Only the chief worker records.
class Profiler : public Callback {
 public:
  explicit Profiler(std::string log_dir = "logs", ProfilerOptions options = {});
  ~Profiler() override;

  void on_train_begin(const Logs& logs) override;
  void on_train_batch_begin(int64_t batch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  /// The trace written, or "" before the window closed.
  const std::string& trace_path() const { return trace_path_; }
  /// The slowest-kernels table of the recorded window.
  const std::string& summary() const { return summary_; }

 private:
  void stop();

  std::string log_dir_;
  ProfilerOptions o_;
  int64_t train_step_ = 0;
  std::shared_ptr<TraceSession> session_;
  std::string trace_path_;
  std::string summary_;
};

}  // namespace kiln::keras
