// Profiler: a TraceSession opened and closed around a window of train steps.
#include "kiln/keras/callbacks/profiler.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "kiln/core/check.h"
#include "kiln/core/host_name.h"
#include "kiln/core/trace_recorder.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

Profiler::Profiler(std::string log_dir, ProfilerOptions options) : log_dir_(std::move(log_dir)), o_(options) {
  const auto [first, last] = o_.profile_batch;
  if (first < 1 || last < first)
    KILN_THROW(ValueError, "[Profiler] profile_batch={", first, ", ", last,
               "} must be {first, last} train steps with 1 <= first <= last.");
}

Profiler::~Profiler() = default;

void Profiler::on_train_begin(const Logs& /*logs*/) { train_step_ = 0; }

void Profiler::on_train_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {
  ++train_step_;
  if (train_step_ == o_.profile_batch.first && model()->is_chief() && trace_path_.empty())
    session_ = std::make_shared<TraceSession>();
}

void Profiler::on_train_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {
  // Steps are counted at their begin: with steps_per_execution > 1 several begins come first.
  if (session_ && train_step_ >= o_.profile_batch.second) stop();
}

void Profiler::on_train_end(const Logs& /*logs*/) { stop(); }  // fit ended inside the window

void Profiler::stop() {
  if (!session_) return;
  std::shared_ptr<TraceSession> session = std::move(session_);
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char run[32];
  std::strftime(run, sizeof run, "%Y_%m_%d_%H_%M_%S", &utc);
  const std::filesystem::path dir = std::filesystem::path(log_dir_) / "plugins" / "profile" / run;
  trace_path_ = (dir / (host_name() + ".trace.json")).string();
  session->recorder().write_chrome_trace(trace_path_);
  summary_ = session->recorder().kernel_summary();
  const std::string table = (dir / (host_name() + ".kernels.txt")).string();
  std::ofstream(table) << summary_;
  if (o_.print_summary && params().verbose > 0)
    std::cout << "Profiler: train steps " << o_.profile_batch.first << "-" << o_.profile_batch.second << " -> "
              << trace_path_ << "\n" << summary_ << std::flush;
}

}  // namespace kiln::keras
