// CPU time of this process's other threads, to check which OpenMP team a kernel really ran on
// (an idle worker accrues no ticks; one that shared the work does), independent of wall time.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace kiln::testing {

/// User + system clock ticks of every thread of this process except the calling one.
inline long other_threads_ticks() {
  long ticks = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    if (task.path().filename() == std::to_string(gettid())) continue;
    std::ifstream in(task.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // from field 3, the state
    std::string field;
    for (int i = 3; i <= 15 && fields >> field; ++i)
      if (i >= 14) ticks += std::stol(field);
  }
  return ticks;
}

/// CPU seconds the calling thread has run.
inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// Whether an idle OpenMP worker can be told from a busy one: OMP_WAIT_POLICY=active keeps
/// idle workers spinning.
inline bool idle_workers_sleep() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy == nullptr || std::string(policy) != "active";
}

/// The other threads' ticks while this thread spends `seconds` of its own CPU time calling
/// `run` repeatedly. One call and a pause come first, so the workers go idle (libgomp spins a
/// bounded while, GOMP_SPINCOUNT, then sleeps): what they accrue after is work they shared.
template <typename Fn>
long worker_ticks_while_running(Fn&& run, double seconds) {
  run();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long before = other_threads_ticks();
  for (const double until = thread_cpu_seconds() + seconds; thread_cpu_seconds() < until;) run();
  return other_threads_ticks() - before;
}

}  // namespace kiln::testing
