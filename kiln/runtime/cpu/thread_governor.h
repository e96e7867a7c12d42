// ThreadGovernor: how many threads an executable's next run uses on a machine other processes
// may share. OpenMP teams are bulk-synchronous: when another CPU-bound process takes a core,
// every barrier waits for the thread that shares it, and the team's idle workers spin against
// the caller's own work between steps: a step cycle on all threads can run slower than on
// fewer (issue 19: 2.2-4.7x on 2 cores with one competing process, the kernels' own time
// unchanged). The governor times step cycles in windows, notices a slowdown against the quiet baseline, probes one thread fewer,
// keeps whichever is faster, and probes back up from time to time, so a machine that becomes
// quiet again gets all its threads back. On a quiet machine it changes nothing after one probe
// window at the start (a machine busy from the first step has no quiet baseline to compare).
//
// Changing the thread count can change the bits of a result whose oneDNN kernel splits a
// reduction by thread (convolution filter gradients): a governed run on a busy machine is not
// bit-reproducible. KILN_THREAD_GOVERNOR=0 turns it off.
#pragma once

#include <vector>

namespace kiln::cpu {

class ThreadGovernor {
 public:
  /// Runs per timing window, and the windows a reduced team runs before probing one more
  /// thread (doubling after each probe that loses, up to kBackoffMax windows; a probe down
  /// that loses backs off the same way). A slowdown is a window median above kSlow x the
  /// quiet baseline. A probe to more threads wins when its median is below kBetter x the
  /// current one; a probe to fewer wins below kFewerIsWorth x: a team that gains under 5% from
  /// its last thread gives it up, since that idle worker spins against the caller's own work
  /// between steps and collapses the step when another process wants the core.
  static constexpr int kWindow = 16;
  static constexpr int kProbeUpEvery = 8;
  static constexpr int kBackoffMax = 64;
  static constexpr double kSlow = 1.25;
  static constexpr double kBetter = 0.95;
  static constexpr double kFewerIsWorth = 1.05;
  static constexpr int kSettleRuns = 2;
  /// A probe whose first kEarlyRuns runs have a median above kClearlyWorse x the current
  /// median ends there, lost: a step that scales (the convnet, 2x slower on one thread) pays a
  /// few slow runs for each probe instead of a window's worth, quiet or busy.
  static constexpr int kEarlyRuns = 4;
  static constexpr double kClearlyWorse = 1.5;

  /// `max_threads`: the team size when quiet (the process's or the logical device's share).
  ThreadGovernor(int max_threads, bool enabled);

  /// The thread count for the next run.
  int threads() const { return probing_ ? probe_threads_ : threads_; }
  /// The next run took `seconds` (on threads() threads).
  void record(double seconds);

  int max_threads() const { return max_threads_; }
  double baseline_seconds() const { return baseline_; }

 private:
  void end_window(double median);
  void start_probe(int threads);

  int max_threads_;
  bool enabled_;
  int threads_;
  bool probing_ = false;
  int probe_threads_ = 0;
  double current_median_ = 0;  // the last full window at threads_
  double baseline_ = 0;        // a quiet window's median at max_threads_; 0 until measured
  int skip_ = 2;               // the first runs pay page faults and lazy initialization
  double settled_median_ = 0;  // the median that made threads_ win
  int windows_since_probe_ = 0;
  int up_backoff_ = kProbeUpEvery;
  int down_backoff_ = 0;
  std::vector<double> window_;
};

}  // namespace kiln::cpu
