#include "kiln/runtime/cpu/thread_governor.h"

#include <algorithm>

#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"

namespace kiln::cpu {

ThreadGovernor::ThreadGovernor(int max_threads, bool enabled)
    : max_threads_(std::max(1, max_threads)), enabled_(enabled && max_threads > 1), threads_(max_threads_) {
  window_.reserve(kWindow);
}

void ThreadGovernor::record(double seconds) {
  if (!enabled_) return;
  if (skip_ > 0) {
    --skip_;
    return;
  }
  window_.push_back(seconds);
  const int runs = static_cast<int>(window_.size());
  // The upper median (the order of a window's runs does not matter).
  std::nth_element(window_.begin(), window_.begin() + runs / 2, window_.end());
  const double median = window_[static_cast<size_t>(runs / 2)];
  const bool lost_early = probing_ && runs == kEarlyRuns && median > kClearlyWorse * current_median_;
  if (runs < kWindow && !lost_early) return;
  window_.clear();
  const int before = threads();
  end_window(median);
  // The first cycles after a change pay for it (workers waking, or spinning down): not
  // counted, so a probe measures the team it tries.
  if (threads() != before) skip_ = kSettleRuns;
}

void ThreadGovernor::start_probe(int threads) {
  probing_ = true;
  probe_threads_ = threads;
  windows_since_probe_ = 0;
}

void ThreadGovernor::end_window(double median) {
  if (probing_) {
    probing_ = false;
    const bool up = probe_threads_ > threads_;
    if (median < (up ? kBetter : kFewerIsWorth) * current_median_) {
      if (log_enabled(LogLevel::kInfo))
        log(LogLevel::kInfo, str_cat("thread governor: a run takes ", median * 1e3, " ms on ", probe_threads_,
                                     " threads against ", current_median_ * 1e3, " ms on ", threads_, "; using ",
                                     probe_threads_));
      threads_ = probe_threads_;
      current_median_ = settled_median_ = median;
      if (threads_ == max_threads_ && median < baseline_) baseline_ = median;
      up_backoff_ = kProbeUpEvery;
      down_backoff_ = 0;
    } else if (up) {  // still busy: probe less often
      up_backoff_ = std::min(up_backoff_ * 2, kBackoffMax);
    } else {  // fewer threads do not help this step: do not keep trying every window
      down_backoff_ = std::min(std::max(1, down_backoff_ * 2), kBackoffMax);
    }
    return;
  }
  current_median_ = median;
  ++windows_since_probe_;
  if (threads_ == max_threads_) {
    // The first window is probed in any case: the machine may have been busy from the start
    // (then the baseline is a busy one), or the step may be too small to gain from threads.
    const bool first = baseline_ == 0;
    if (first || median < baseline_) baseline_ = median;
    if (first || (median > kSlow * baseline_ && windows_since_probe_ > down_backoff_)) start_probe(threads_ - 1);
    return;
  }
  // A reduced team: one thread fewer when this count has slowed too; one more now and then
  // (the other process may have ended).
  if (threads_ > 1 && median > kSlow * settled_median_ && windows_since_probe_ > down_backoff_)
    start_probe(threads_ - 1);
  else if (windows_since_probe_ >= up_backoff_)
    start_probe(threads_ + 1);
}

}  // namespace kiln::cpu
