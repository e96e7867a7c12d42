// While steps on the CPU: a scan-like loop that writes one row of a carried buffer per
// iteration updates that buffer in place, gives the reference evaluator's values bit for bit,
// and its nested programs count in the executable's planned peak.
#include "kiln/runtime/cpu/control_flow_steps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "kiln/core/trace_recorder.h"
#include "kiln/ir/builder.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "tests/testing/backend_conformance.h"
#include "tests/testing/scan_loop.h"

namespace kiln::cpu {
namespace {

using ir::Builder;
using ir::Instruction;
using ir::Opcode;
using testing::row_writing_loop;

// The labels of the steps that ran, nested programs' included.
std::vector<std::string> traced_step_labels(runtime::Executable& exe, std::vector<HostTensor> args) {
  std::vector<std::string> labels;
  TraceSession session;
  exe.run(args);
  for (const TraceEvent& e : session.recorder().events())
    if (e.category == "kernel") labels.push_back(e.name);
  return labels;
}

std::unique_ptr<ir::Module> loop_module(const Shape& s, int64_t shift, bool read_old_ys) {
  auto m = std::make_unique<ir::Module>("scan");
  Builder b(m->entry());
  Instruction* ys = b.parameter(s, "ys");
  Instruction* xs = b.parameter(s, "xs");
  m->entry()->set_outputs({b.get_tuple_element(row_writing_loop(b, ys, xs, shift, read_old_ys), 0)});
  return m;
}

TEST(WhileStepTest, AScanBufferIsUpdatedInPlaceWithTheReferenceValuesAtEveryStart) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 4; ++trial) {
    const Shape s(DType::kF32, {std::uniform_int_distribution<int64_t>(1, 9)(rng),
                                std::uniform_int_distribution<int64_t>(1, 40)(rng)});
    const int64_t t = s.dims()[0];
    // Rows from 0, from the middle (the later ones clamp to the last row), all past the end.
    for (int64_t shift : {int64_t{0}, t / 2, t + 3}) {
      SCOPED_TRACE(str_cat(s, " shift ", shift));
      testing::expect_matches_reference({s, s}, [&](Builder& b, std::vector<Instruction*>& p) {
        return std::vector<Instruction*>{b.get_tuple_element(row_writing_loop(b, p[0], p[1], shift, false), 0)};
      }, {.tol = 0});
      std::vector<HostTensor> args = {testing::random_tensor(s, 1), testing::random_tensor(s, 2)};
      auto exe = make_cpu_backend()->compile(loop_module(s, shift, false), {});
      const std::vector<std::string> labels = traced_step_labels(*exe, args);
      EXPECT_EQ(std::count(labels.begin(), labels.end(), "dynamic_update_slice(in place)"), t);
      EXPECT_EQ(std::count(labels.begin(), labels.end(), "dynamic_update_slice(copy)"), 0);
    }
  }
}

TEST(WhileStepTest, ABufferTheBodyAlsoReadsIsCopiedNotUpdatedInPlace) {
  const Shape s(DType::kF32, {5, 3});
  testing::expect_matches_reference({s, s}, [&](Builder& b, std::vector<Instruction*>& p) {
    return std::vector<Instruction*>{b.get_tuple_element(row_writing_loop(b, p[0], p[1], 1, true), 0)};
  }, {.tol = 0});
  auto exe = make_cpu_backend()->compile(loop_module(s, 1, true), {});
  const std::vector<std::string> labels =
      traced_step_labels(*exe, {testing::random_tensor(s, 1), testing::random_tensor(s, 2)});
  EXPECT_EQ(std::count(labels.begin(), labels.end(), "dynamic_update_slice(copy)"), 5);
}

TEST(WhileStepTest, NestedProgramsCountInThePlannedPeak) {
  // The outer plan holds the arguments ys and xs and the output; the loop step holds ys
  // twice (results_ and next_: the body reads ys, so it is not updated in place) and its
  // programs' arenas. xs is viewed, not copied: nothing reads it after the loop.
  const Shape s(DType::kF32, {64, 256});
  auto copied = make_cpu_backend()->compile(loop_module(s, 0, true), {});
  EXPECT_GE(copied->planned_peak_bytes(), 3 * s.byte_size() + 2 * s.byte_size());
  // The body's arena (its [1, 256] rows) counts in the activations; the carried buffers do not.
  EXPECT_GT(copied->planned_activation_bytes(), 0);
  EXPECT_LT(copied->planned_activation_bytes(), s.byte_size());
  // In place, the step needs no second ys.
  auto in_place = make_cpu_backend()->compile(loop_module(s, 0, false), {});
  EXPECT_LE(in_place->planned_peak_bytes(), copied->planned_peak_bytes() - s.byte_size());
}

TEST(WhileStepTest, AStepWhoseLoopDoesNotFitIsAnOutOfMemoryError) {
  // Room for the outer plan (arguments and output), not for the loop's own buffers.
  const Shape s(DType::kF32, {64, 256});
  auto small = make_cpu_backend(3 * s.byte_size() + 4096);
  EXPECT_THROW(small->compile(loop_module(s, 0, true), {}), OutOfMemoryError);
}

}  // namespace
}  // namespace kiln::cpu
