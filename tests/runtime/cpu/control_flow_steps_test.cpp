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

namespace kiln::cpu {
namespace {

using ir::Builder;
using ir::Instruction;
using ir::Opcode;

const Shape kCounter(DType::kI32, {});

// carried (ys [t, n], i, xs [t, n]): ys[i + shift] = -0.5 * xs[i] (the start clamped so the
// row fits, as XLA clamps), t iterations. With `read_old_ys` the body also adds ys's old row
// 0 into the update, so ys has a second reader and cannot be updated in place.
Instruction* row_writing_loop(Builder& b, Instruction* ys, Instruction* xs, int64_t shift, bool read_old_ys) {
  ir::Module& m = *b.computation()->module();
  const Shape& s = ys->shape();
  const int64_t t = s.dims()[0], n = s.dims()[1];
  ir::Computation* body = m.add_computation(str_cat("body", m.computations().size()));
  Builder bb(body);
  Instruction* bys = bb.parameter(s, "ys");
  Instruction* bi = bb.parameter(kCounter, "i");
  Instruction* bxs = bb.parameter(s, "xs");
  Instruction* zero = bb.scalar(0, DType::kI32);
  Instruction* x = bb.dynamic_slice(bxs, {bi, zero}, {1, n});
  Instruction* y = bb.binary(Opcode::kMul, x, bb.full(x->shape(), -0.5));
  if (read_old_ys) y = bb.binary(Opcode::kAdd, y, bb.slice(bys, {0, 0}, {1, n}, {1, 1}));
  Instruction* at = bb.binary(Opcode::kAdd, bi, bb.scalar(static_cast<double>(shift), DType::kI32));
  body->set_outputs({bb.dynamic_update_slice(bys, y, {at, zero}), bb.binary(Opcode::kAdd, bi, bb.scalar(1, DType::kI32)), bxs});
  ir::Computation* cond = m.add_computation(str_cat("cond", m.computations().size()));
  Builder cb(cond);
  cb.parameter(s, "ys");
  Instruction* ci = cb.parameter(kCounter, "i");
  cb.parameter(s, "xs");
  cond->add_output(cb.compare(ir::Comparison::kLt, ci, cb.scalar(static_cast<double>(t), DType::kI32)));
  return b.while_loop({ys, b.scalar(0, DType::kI32), xs}, cond, body, t);
}

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
