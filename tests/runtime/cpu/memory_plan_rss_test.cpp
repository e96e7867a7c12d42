// The planned peak of a step must match what running it really costs: within 10% of the
// measured growth of resident memory from before its arguments exist to after its first run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "kiln/ir/builder.h"
#include "kiln/runtime/cpu/cpu_backend.h"

namespace kiln::cpu {
namespace {

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGE_SIZE);
}

TEST(CpuMemoryPlanTest, PlannedPeakIsWithinTenPercentOfMeasuredGrowth) {
  using ir::Opcode;
  // Big enough (hundreds of MiB) that allocator and library noise is lost in it.
  const int64_t rows = 4096, cols = 4096;
  auto m = std::make_unique<ir::Module>("rss_step");
  ir::Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF32, {rows, cols}), "x");
  auto* w = b.parameter(Shape(DType::kF32, {cols, 256}), "w");
  auto* h = b.dot_general(x, w, {.lhs_contracting = {1}, .rhs_contracting = {0}});
  auto* e = b.unary(Opcode::kExp, x);
  auto* t = b.transpose(e, {1, 0});  // not fusible into the reduction below: stays a buffer
  auto* s = b.reduce(Opcode::kReduceSum, b.binary(Opcode::kMul, t, t), {1});
  m->entry()->set_outputs({h, s, b.binary(Opcode::kAdd, x, e)});

  const int64_t before = resident_bytes();
  std::vector<HostTensor> args = {HostTensor(x->shape()), HostTensor(w->shape())};
  auto exe = make_cpu_backend()->compile(std::move(m), {});
  auto out = exe->run(args);
  const int64_t growth = resident_bytes() - before;
  const int64_t planned = exe->planned_peak_bytes();
  EXPECT_GT(planned, int64_t{200} << 20);
  EXPECT_NEAR(static_cast<double>(growth), static_cast<double>(planned), 0.10 * static_cast<double>(planned))
      << "planned " << planned << " bytes, measured " << growth << " bytes\n" << exe->describe();
}

}  // namespace
}  // namespace kiln::cpu
