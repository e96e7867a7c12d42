// Bench helpers: one JSON line per figure on stdout, so runs can be collected and compared.
// Benches are never run as timed tests.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/core/debug_options.h"

namespace kiln::bench {

/// Builds `{"key": value, ...}` and prints it as one line.
class JsonLine {
 public:
  JsonLine& add(std::string_view key, double value) {
    std::ostringstream v;
    v.precision(6);
    v << value;
    return raw(key, v.str());
  }
  JsonLine& add(std::string_view key, int64_t value) { return raw(key, std::to_string(value)); }
  JsonLine& add(std::string_view key, std::string_view value) {
    std::ostringstream quoted;
    quoted << '"';
    for (char c : value) {
      if (c == '"' || c == '\\') quoted << '\\';
      quoted << c;
    }
    quoted << '"';
    return raw(key, quoted.str());
  }
  void print() const { std::cout << "{" << body_.str() << "}" << std::endl; }

 private:
  JsonLine& raw(std::string_view key, const std::string& value) {
    if (!first_) body_ << ", ";
    first_ = false;
    body_ << '"' << key << "\": " << value;
    return *this;
  }
  std::ostringstream body_;
  bool first_ = true;
};

/// Seconds since construction.
class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// Median over `runs` runs of the milliseconds per call of `step(s)`, s = 0 .. steps-1;
/// `before_run()` runs untimed before each run (e.g. a fresh shuffle).
template <typename BeforeRun, typename StepFn>
double median_ms_per_step(int runs, int64_t steps, BeforeRun before_run, StepFn step) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    before_run();
    Stopwatch w;
    for (int64_t s = 0; s < steps; ++s) step(s);
    ms.push_back(w.seconds() * 1e3 / static_cast<double>(steps));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// Medians of ms per step of two step functions timed alternately, A B B A per round, so a
/// drift in machine load falls on both alike (`runs` timed runs of each).
template <typename BeforeRun, typename StepA, typename StepB>
std::pair<double, double> paired_median_ms_per_step(int runs, int64_t steps, BeforeRun before_run, StepA a, StepB b) {
  std::vector<double> ms_a, ms_b;
  auto time = [&](auto& step, std::vector<double>& out) {
    before_run();
    Stopwatch w;
    for (int64_t s = 0; s < steps; ++s) step(s);
    out.push_back(w.seconds() * 1e3 / static_cast<double>(steps));
  };
  for (int r = 0; r < runs; ++r) {
    if (r % 2 == 0) { time(a, ms_a); time(b, ms_b); }
    else { time(b, ms_b); time(a, ms_a); }
  }
  std::sort(ms_a.begin(), ms_a.end());
  std::sort(ms_b.begin(), ms_b.end());
  return {ms_a[ms_a.size() / 2], ms_b[ms_b.size() / 2]};
}

/// Peak resident set size of this process so far, in MiB.
inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

/// Another CPU-bound process on the machine while it lives: a forked child spinning on one
/// core (a busy machine, issue 19), killed on destruction.
class CompetingLoad {
 public:
  CompetingLoad() : pid_(fork()) {
    if (pid_ == 0) {
      volatile uint64_t x = 0;
      for (;;) x = x + 1;
    }
  }
  ~CompetingLoad() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  CompetingLoad(const CompetingLoad&) = delete;
  CompetingLoad& operator=(const CompetingLoad&) = delete;
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_;
};

/// `<bench>.compete`: the median ms/step of `run_steps` (a paired median_ms_per_step call)
/// with a CompetingLoad running, against `quiet_ms` measured before in the same process, and
/// the threads the step program (`step_program()`: its executable, which run_steps may
/// recompile) used at the end of the quiet runs and of the competing ones: the governor's choice.
template <typename RunSteps, typename StepProgram>
JsonLine compete_line(const std::string& bench, double quiet_ms, RunSteps run_steps, StepProgram step_program) {
  const int quiet_threads = step_program()->last_run_threads();
  double busy_ms;
  {
    CompetingLoad load;
    busy_ms = run_steps();
  }
  JsonLine c;
  c.add("bench", bench + ".compete")
      .add("quiet_ms_per_step", quiet_ms)
      .add("competing_ms_per_step", busy_ms)
      .add("slowdown", busy_ms / quiet_ms)
      .add("target", 1.5)
      .add("thread_governor", DebugOptions::global().thread_governor ? "on" : "off")
      .add("quiet_threads", static_cast<int64_t>(quiet_threads))
      .add("competing_threads", static_cast<int64_t>(step_program()->last_run_threads()));
  return c;
}

/// Runs a shell command (a peer benchmark) and returns its stdout; empty if it cannot start.
inline std::string run_command(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  return out;
}

/// The number after `"key":` in a JSON text, or 0 when the key is absent.
inline double json_number(const std::string& json, std::string_view key) {
  std::string quoted = "\"";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on operator+
  quoted.append(key).append("\":");
  const size_t at = json.find(quoted);
  return at == std::string::npos ? 0.0 : std::atof(json.c_str() + at + quoted.size());
}

/// The string after `"key": "` in a JSON text up to the next quote, or `absent` when the key is
/// absent (the peers' BLAS kind: "openblas").
inline std::string json_string(const std::string& json, std::string_view key, const std::string& absent) {
  std::string quoted = "\"";
  quoted.append(key).append("\": \"");
  const size_t at = json.find(quoted);
  if (at == std::string::npos) return absent;
  const size_t begin = at + quoted.size();
  return json.substr(begin, json.find('"', begin) - begin);
}

/// Runs a PyTorch peer script under Debian's python as ../shared/peers/README.md says (2
/// threads, OpenBLAS single-threaded, the OPENBLAS_CORETYPE/L2_SIZE overrides unset) with
/// `args`, and returns its stdout (its JSON); empty when it cannot run.
inline std::string run_pytorch_script(const std::string& script, const std::string& args) {
  return run_command("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=2 "
                     "/usr/bin/python3 " + script + " " + args + " 2>/dev/null");
}

/// Runs the PyTorch peer (`peers`/pytorch/bench_torch.py) for `workload` ("w1", "w2", ...) and
/// returns the figure `key` of its JSON; 0 when unavailable.
inline double pytorch_peer(const std::string& peers, const std::string& workload, const std::string& key,
                           const std::string& extra_args = "") {
  return json_number(run_pytorch_script(peers + "/pytorch/bench_torch.py", "--workload " + workload + " --threads 2 " +
                                                                              extra_args),
                     key);
}

}  // namespace kiln::bench
