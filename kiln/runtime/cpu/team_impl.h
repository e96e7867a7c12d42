// Thread-team helpers. Kiln's CPU kernels are written as "team work": code that every thread
// of an OpenMP team runs, sharing the work with orphaned `omp for` loops (each ending in a
// barrier). A kernel called alone opens its own team; consecutive kernels of a step are run
// by one team (one launch), which saves a fork/join per kernel.
#pragma once

#include <omp.h>

#include <cstdint>

namespace kiln::cpu {

/// Below this many elements a kernel runs on one thread: a fork/join costs more than it saves.
inline constexpr int64_t kParallelThreshold = int64_t{1} << 15;

/// Runs `work` on the current team if one is active, else on a new team, or on this thread
/// alone (no team at all) when `parallel` is false or only one thread is allowed: orphaned
/// `omp for`/`single` outside a region cost nothing, while a team of one still runs libgomp's
/// barriers, and every barrier's last thread makes a futex_wake system call whether or not
/// anyone sleeps (about 40 per seed MLP step, ~2 us each on a virtual machine).
template <typename Fn>
void run_on_team(bool parallel, Fn&& work) {
  if (omp_in_parallel() || !parallel || omp_get_max_threads() == 1) {
    work();
    return;
  }
#pragma omp parallel
  work();
}

}  // namespace kiln::cpu
