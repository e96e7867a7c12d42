// CpuWarmup: what the first compile of a process pays once, started on a thread of its own when
// a CPU backend is made, so it runs while the first step is traced, optimized and lowered
// instead of after: oneDNN's f32 gemm (its matmul on CPUs without brgemm, the AVX2 ones)
// generates every kernel variant on its first call (20-30 ms), and LLVM's first compile in a
// process pages in and initializes its code generator (30-50 ms on this VM), as the ORC
// session's creation does. The work is the same; on one core it gains nothing.
#pragma once

#include <thread>

namespace kiln::cpu {

class CpuWarmup {
 public:
  /// `code_generator`: also warm LLVM (the backend generates its loop kernels).
  explicit CpuWarmup(bool code_generator);
  /// Waits for the thread (it never waits on anything of Kiln's).
  ~CpuWarmup();
  CpuWarmup(const CpuWarmup&) = delete;
  CpuWarmup& operator=(const CpuWarmup&) = delete;

 private:
  std::thread thread_;
};

}  // namespace kiln::cpu
