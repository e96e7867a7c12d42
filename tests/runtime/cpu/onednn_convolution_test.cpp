// The oneDNN convolution adapter against the reference evaluator: forward, both backward ops
// and the fused bias + activation epilogue over strides, same/valid/asymmetric padding,
// dilation and groups, in f32 and bf16; forms oneDNN cannot run fall back to the reference.
#include "kiln/runtime/cpu/onednn_convolution.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdio>
#include <random>

#include "kiln/ir/builder.h"
#include "kiln/runtime/cpu/contraction_decisions.h"
#include "kiln/ir/shape_inference.h"
#include "tests/testing/backend_conformance.h"
#include "tests/testing/thread_ticks.h"

namespace kiln::cpu {
namespace {

using ir::Builder;
using ir::ConvDims;
using ir::Instruction;
using ir::Opcode;
using testing::expect_matches_reference;

struct ConvCase {
  std::string name;
  Dims x, w;  // x: (N, H, W, C)  w: (KH, KW, C/groups, F)
  ConvDims conv;
};

Dims conv_output_dims(const Dims& x, const Dims& w, const ConvDims& c) {
  Dims y = {x[0], 0, 0, w[3]};
  for (size_t i = 0; i < 2; ++i)
    y[i + 1] = ir::windowed_output_size(x[i + 1], w[i], c.strides[i], c.padding_low[i], c.padding_high[i],
                                        c.dilation[i]);
  return y;
}

std::vector<ConvCase> cases() {
  return {
      {"valid 3x3", {2, 7, 8, 3}, {3, 3, 3, 4}, {}},
      {"same stride 2", {2, 9, 9, 3}, {3, 3, 3, 5}, {.strides = {2, 2}, .padding_low = {1, 1}, .padding_high = {1, 1}}},
      {"asymmetric padding", {3, 6, 7, 2}, {3, 2, 2, 4}, {.padding_low = {0, 1}, .padding_high = {2, 0}}},
      {"even kernel same stride 2", {2, 8, 7, 3}, {2, 2, 3, 4}, {.strides = {2, 2}, .padding_high = {0, 1}}},
      {"dilation 2", {2, 9, 10, 3}, {3, 3, 3, 4}, {.padding_low = {2, 2}, .padding_high = {2, 2}, .dilation = {2, 2}}},
      {"dilation and stride", {2, 11, 9, 2}, {3, 2, 2, 3},
       {.strides = {2, 1}, .padding_low = {1, 0}, .padding_high = {1, 1}, .dilation = {2, 3}}},
      {"groups 2", {2, 6, 6, 4}, {3, 3, 2, 6}, {.padding_low = {1, 1}, .padding_high = {1, 1}, .groups = 2}},
      {"depthwise", {2, 6, 5, 4}, {3, 3, 1, 8}, {.strides = {2, 2}, .padding_low = {1, 1}, .groups = 4}},
      {"1x1 strided", {3, 5, 6, 4}, {1, 1, 4, 7}, {.strides = {2, 1}}},
      {"mnist conv1", {4, 28, 28, 1}, {3, 3, 1, 32}, {}},
  };
}

// convolution(x, w), conv_backward_input(dy, w) and conv_backward_filter(x, dy) in one module.
// `debug`: compile options (KILN_16BIT_CONTRACTIONS=f32 forces the widened 16-bit path).
void expect_conv_ops_match(const ConvCase& c, DType t, double tol, const DebugOptions* debug = nullptr,
                           std::string* steps_out = nullptr) {
  SCOPED_TRACE(str_cat(c.name, " ", name(t)));
  const Shape xs(t, c.x), ws(t, c.w), ys(t, conv_output_dims(c.x, c.w, c.conv));
  std::string steps;
  expect_matches_reference({xs, ws, ys}, [&](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.convolution(p[0], p[1], c.conv),
                                     b.conv_backward_input(p[2], p[1], xs, c.conv),
                                     b.conv_backward_filter(p[0], p[2], ws, c.conv)};
  }, {.tol = tol, .steps = &steps, .debug = debug});
  EXPECT_EQ(steps.find("reference"), std::string::npos) << steps;
  if (steps_out != nullptr) *steps_out = steps;
}

TEST(OnednnConvolutionTest, ForwardAndBothGradientsMatchReferenceF32) {
  for (const ConvCase& c : cases()) expect_conv_ops_match(c, DType::kF32, 1e-4);
}

TEST(OnednnConvolutionTest, ForwardAndBothGradientsMatchReferenceBf16) {
  for (const ConvCase& c : cases()) expect_conv_ops_match(c, DType::kBF16, 3e-2);
}

// f32 compute from 16-bit storage (the path of CPUs without 16-bit kernels, forced here):
// right on every case, and on a batch too large for one tile of f32 copies, run a tile of
// images at a time, the filter gradient summed over the tiles.
TEST(OnednnConvolutionTest, WidenedBf16PathMatchesReferenceInBatchTiles) {
  DebugOptions widened = DebugOptions::global();
  widened.sixteen_bit_contractions = "f32";
  std::string steps;
  for (const ConvCase& c : cases()) {
    expect_conv_ops_match(c, DType::kBF16, 3e-2, &widened, &steps);
    EXPECT_NE(steps.find("widened"), std::string::npos) << steps;
  }
  // 9 x 30 x 30 x 64 f32 outputs per 2 MiB tile: 20 images are 3 tiles, the last of 2.
  const ConvCase big{"batch tiles", {20, 32, 32, 8}, {3, 3, 8, 64}, {}};
  expect_conv_ops_match(big, DType::kBF16, 3e-2, &widened, &steps);
  EXPECT_NE(steps.find("x3 batch tiles"), std::string::npos) << steps;
}

TEST(OnednnConvolutionTest, BiasReluEpilogueIsOneKernel) {
  const Shape x(DType::kF32, {2, 9, 9, 3}), w(DType::kF32, {3, 3, 3, 8}), bias(DType::kF32, {8});
  const ConvDims conv{.strides = {2, 2}, .padding_low = {1, 1}, .padding_high = {1, 1}};
  int kernels = 0;
  std::string steps;
  expect_matches_reference({x, w, bias}, [&](Builder& b, auto& p) {
    Instruction* y = b.convolution(p[0], p[1], conv);
    y = b.binary(Opcode::kAdd, y, b.broadcast_in_dim(p[2], y->shape().dims(), {3}));
    return std::vector<Instruction*>{b.binary(Opcode::kMax, y, b.full(y->shape(), 0.0))};
  }, {.tol = 1e-4, .kernel_count = &kernels, .steps = &steps});
  EXPECT_EQ(kernels, 1) << steps;
  EXPECT_NE(steps.find("convolution+bias+relu"), std::string::npos) << steps;
}

TEST(OnednnConvolutionTest, TanhAndLogisticEpiloguesAndBf16Bias) {
  for (DType t : {DType::kF32, DType::kBF16}) {
    const Shape x(t, {2, 6, 6, 4}), w(t, {3, 3, 2, 6}), bias(t, {6});
    const ConvDims conv{.padding_low = {1, 1}, .padding_high = {1, 1}, .groups = 2};
    std::string steps;
    expect_matches_reference({x, w, bias, w}, [&](Builder& b, auto& p) {
      Instruction* y = b.convolution(p[0], p[1], conv);
      Instruction* biased = b.binary(Opcode::kAdd, y, b.broadcast_in_dim(p[2], y->shape().dims(), {3}));
      Instruction* z = b.convolution(p[0], p[3], conv);  // another filter: CSE must not merge it with y
      return std::vector<Instruction*>{b.unary(Opcode::kTanh, biased), b.unary(Opcode::kLogistic, z)};
    }, {.tol = t == DType::kF32 ? 1e-4 : 3e-2, .steps = &steps});
    EXPECT_NE(steps.find("convolution+bias+tanh"), std::string::npos) << steps;
    EXPECT_NE(steps.find("convolution+logistic"), std::string::npos) << steps;
  }
}

TEST(OnednnConvolutionTest, NegativePaddingFallsBackToTheReference) {
  const Shape x(DType::kF32, {1, 8, 8, 2}), w(DType::kF32, {3, 3, 2, 3});
  const ConvDims conv{.padding_low = {-1, 0}, .padding_high = {0, -1}};
  std::string steps;
  expect_matches_reference({x, w}, [&](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.convolution(p[0], p[1], conv)};
  }, {.tol = 1e-4, .steps = &steps});
  EXPECT_NE(steps.find("reference convolution"), std::string::npos) << steps;
}

// Where the CPU has a bf16 convolution, which path a shape runs is timed once and then
// reused (the mechanism, not which path wins); elsewhere the widened path runs untimed.
TEST(OnednnConvolutionTest, TheTimedChoiceIsRecordedAndReused) {
  ir::Module m("m");
  Builder b(m.entry());
  Instruction* conv = b.convolution(b.parameter(Shape(DType::kBF16, {4, 12, 12, 8}), "x"),
                                    b.parameter(Shape(DType::kBF16, {3, 3, 8, 16}), "w"), {});
  ContractionDecisions& decisions = ContractionDecisions::instance();
  decisions.forget_in_memory();
  const ContractionDecisions::Stats before = decisions.stats();
  const MatmulOptions memory_only{.choice = MatmulOptions::Choice::kAuto};
  ASSERT_NE(ConvolutionKernel::create(*conv, memory_only), nullptr);
  const bool has_native =
      ConvolutionKernel::create(*conv, {.choice = MatmulOptions::Choice::kNative})->label().find("widened") ==
      std::string::npos;
  EXPECT_EQ(decisions.stats().timed, before.timed + (has_native ? 1 : 0));
  std::unique_ptr<ConvolutionKernel> again = ConvolutionKernel::create(*conv, memory_only);
  EXPECT_EQ(decisions.stats().timed, before.timed + (has_native ? 1 : 0));
  EXPECT_EQ(decisions.stats().memory_hits, before.memory_hits + (has_native ? 1 : 0));
  std::printf("bf16 convolution runs: %s\n", again->label().c_str());
}

// oneDNN sizes a convolution's team when the primitive is created and ignored
// omp_set_num_threads after: a step the thread governor ran on one thread still ran its
// convolutions on two (issue 19). A kernel created for two threads and run while one thread is
// the team size must leave the other OpenMP thread idle, and give the same results.
TEST(OnednnConvolutionTest, EachRunUsesTheTeamSizeOfThatRun) {
  if (!testing::idle_workers_sleep())
    GTEST_SKIP() << "OMP_WAIT_POLICY=active: idle OpenMP workers never stop spinning";
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  ir::Module m("m");
  Builder b(m.entry());
  const ConvDims conv{.padding_low = {1, 1}, .padding_high = {1, 1}};
  const Shape xs(DType::kF32, {16, 20, 20, 16}), ws(DType::kF32, {3, 3, 16, 32}), ys(DType::kF32, {16, 20, 20, 32});
  Instruction* x = b.parameter(xs, "x");
  Instruction* w = b.parameter(ws, "w");
  Instruction* dy = b.parameter(ys, "dy");
  const std::vector<Instruction*> ops = {b.convolution(x, w, conv), b.conv_backward_input(dy, w, xs, conv),
                                         b.conv_backward_filter(x, dy, ws, conv)};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::vector<float>> operands;
  for (const Shape& s : {xs, ws, ys}) {
    operands.emplace_back(static_cast<size_t>(s.num_elements()));
    for (float& v : operands.back()) v = u(rng);
  }
  const std::vector<std::vector<const void*>> ins = {{operands[0].data(), operands[1].data()},
                                                     {operands[2].data(), operands[1].data()},
                                                     {operands[0].data(), operands[2].data()}};
  std::vector<std::unique_ptr<ConvolutionKernel>> kernels;
  for (Instruction* op : ops) {
    kernels.push_back(ConvolutionKernel::create(*op));
    ASSERT_NE(kernels.back(), nullptr) << ir::opcode_name(op->opcode());
  }
  auto run_all = [&](std::vector<std::vector<float>>& outs) {
    outs.resize(ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      outs[k].resize(static_cast<size_t>(ops[k]->shape().num_elements()));
      kernels[k]->run(ins[k].data(), outs[k].data());
    }
  };

  std::vector<std::vector<float>> two, one, scratch;
  auto run_again = [&] { run_all(scratch); };
  run_all(two);
  // The measure sees a worker's work: on two threads it does about half of it.
  EXPECT_GT(testing::worker_ticks_while_running(run_again, 0.3), 5);
  omp_set_num_threads(1);
  run_all(one);
  EXPECT_LE(testing::worker_ticks_while_running(run_again, 0.3), 1);
  omp_set_num_threads(saved);
  for (size_t k = 0; k < ops.size(); ++k)
    for (size_t i = 0; i < one[k].size(); ++i)
      ASSERT_NEAR(one[k][i], two[k][i], 1e-4 * (1 + std::abs(two[k][i]))) << ir::opcode_name(ops[k]->opcode()) << " " << i;
}

TEST(OnednnConvolutionTest, CreateRejectsOtherOps) {
  ir::Module m("m");
  Builder b(m.entry());
  Instruction* x = b.parameter(Shape(DType::kF32, {4}), "x");
  EXPECT_EQ(ConvolutionKernel::create(*b.unary(Opcode::kNeg, x)), nullptr);
}

}  // namespace
}  // namespace kiln::cpu
