// The oneDNN pooling adapter and the first-max gradient loop against the reference evaluator:
// max and mean pooling, forward and gradient, valid/same/asymmetric padding and overlapping
// windows, f32 and bf16; windows oneDNN cannot pool fall back to the reference.
#include "kiln/runtime/cpu/onednn_pooling.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kiln/ir/builder.h"
#include "kiln/ir/shape_inference.h"
#include "tests/testing/backend_conformance.h"

namespace kiln::cpu {
namespace {

using ir::Builder;
using ir::Instruction;
using ir::Opcode;
using ir::ReduceKind;
using ir::Window;
using testing::expect_matches_reference;

struct PoolCase {
  std::string name;
  Dims x;       // (N, H, W, C)
  Dims k, s;    // (KH, KW), (SH, SW)
  Dims lo, hi;  // padding (H, W)
};

// The NHWC window of a 2-D pooling.
Window window_of(const PoolCase& c) {
  return {.size = {1, c.k[0], c.k[1], 1}, .strides = {1, c.s[0], c.s[1], 1},
          .padding_low = {0, c.lo[0], c.lo[1], 0}, .padding_high = {0, c.hi[0], c.hi[1], 0}};
}

Dims pooled_dims(const Dims& x, const Window& w) {
  Dims y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = ir::windowed_output_size(x[i], w.size[i], w.strides[i], w.padding_low[i], w.padding_high[i], 1);
  return y;
}

std::vector<PoolCase> cases() {
  return {
      {"2x2 valid", {2, 8, 8, 3}, {2, 2}, {2, 2}, {0, 0}, {0, 0}},
      {"2x2 valid odd input", {2, 7, 9, 4}, {2, 2}, {2, 2}, {0, 0}, {0, 0}},
      {"3x3 stride 2 same", {2, 7, 7, 3}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},
      {"2x2 stride 2 same odd", {3, 7, 5, 2}, {2, 2}, {2, 2}, {0, 0}, {1, 1}},
      {"3x3 stride 1 overlapping same", {2, 6, 5, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {"asymmetric", {2, 6, 7, 2}, {3, 2}, {2, 1}, {0, 1}, {2, 0}},
      {"mnist pool", {4, 26, 26, 32}, {2, 2}, {2, 2}, {0, 0}, {0, 0}},
  };
}

void expect_pool_ops_match(const PoolCase& c, ReduceKind kind, DType t, double tol, bool ties = false,
                           const DebugOptions* debug = nullptr) {
  SCOPED_TRACE(str_cat(c.name, " ", ir::reduce_kind_name(kind), " ", name(t), ties ? " ties" : ""));
  const Window w = window_of(c);
  const Shape xs(t, c.x), ys(t, pooled_dims(c.x, w));
  std::string steps;
  expect_matches_reference({xs, ys}, [&](Builder& b, auto& p) {
    Instruction* x = ties ? b.unary(Opcode::kSign, p[0]) : p[0];  // sign: many equal maxima
    return std::vector<Instruction*>{b.reduce_window(x, kind, w), b.reduce_window_grad(x, p[1], kind, w)};
  }, {.tol = tol, .steps = &steps, .debug = debug});
  EXPECT_EQ(steps.find("reference"), std::string::npos) << steps;
}

TEST(OnednnPoolingTest, MaxAndMeanForwardAndGradientMatchReferenceF32) {
  for (const PoolCase& c : cases())
    for (ReduceKind kind : {ReduceKind::kMax, ReduceKind::kMean}) expect_pool_ops_match(c, kind, DType::kF32, 1e-5);
}

TEST(OnednnPoolingTest, MaxAndMeanForwardAndGradientMatchReferenceBf16) {
  for (const PoolCase& c : cases())
    for (ReduceKind kind : {ReduceKind::kMax, ReduceKind::kMean}) expect_pool_ops_match(c, kind, DType::kBF16, 2e-2);
}

// In bf16 and f16 both ways: oneDNN's 16-bit pooling where the CPU has it, and f32 from 16-bit
// storage (what other CPUs run; KILN_16BIT_CONTRACTIONS=f32 forces it here).
TEST(OnednnPoolingTest, SixteenBitNativeAndWidenedMatchReference) {
  DebugOptions widened = DebugOptions::global();
  widened.sixteen_bit_contractions = "f32";
  for (DType t : {DType::kBF16, DType::kF16})
    for (const DebugOptions* debug : {static_cast<const DebugOptions*>(nullptr), static_cast<const DebugOptions*>(&widened)})
      for (const PoolCase& c : cases())
        for (ReduceKind kind : {ReduceKind::kMax, ReduceKind::kMean})
          expect_pool_ops_match(c, kind, t, t == DType::kBF16 ? 2e-2 : 3e-3, false, debug);
}

// Where oneDNN has no 16-bit pooling (forced here), a 16-bit max pool is Kiln's first-max loop
// on the 16-bit values themselves: the reference's bits exactly, NaNs (quieted, the first one
// of a window winning), infinities, signed zeros and ties included.
TEST(OnednnPoolingTest, SixteenBitMaxPoolWithoutOneDnnIsTheReferenceBitForBit) {
  DebugOptions widened = DebugOptions::global();
  widened.sixteen_bit_contractions = "f32";
  std::mt19937 rng(36);
  for (DType t : {DType::kBF16, DType::kF16}) {
    const std::vector<uint16_t> specials =
        t == DType::kBF16 ? std::vector<uint16_t>{0x7fc1, 0x7f81, 0xffa0, 0x7f80, 0xff80, 0x0000, 0x8000, 0x3f80, 0x0001}
                          : std::vector<uint16_t>{0x7e01, 0x7c01, 0xfe10, 0x7c00, 0xfc00, 0x0000, 0x8000, 0x3c00, 0x0001};
    for (const PoolCase& c : cases()) {
      SCOPED_TRACE(str_cat(c.name, " ", name(t)));
      const Window w = window_of(c);
      const Shape xs(t, c.x);
      auto m = std::make_unique<ir::Module>("pool");
      Builder b(m->entry());
      m->entry()->set_outputs({b.reduce_window(b.parameter(xs, "x"), ReduceKind::kMax, w)});
      HostTensor x(xs);
      auto* bits = static_cast<uint16_t*>(x.raw_data());
      for (int64_t i = 0; i < xs.num_elements(); ++i)
        bits[i] = rng() % 4 == 0 ? specials[rng() % specials.size()] : static_cast<uint16_t>(0x3c00 + rng() % 0x800);
      std::vector<HostTensor> args{x};
      const HostTensor want = ir::evaluate(*m->entry(), args)[0];
      runtime::CompileOptions options;
      options.debug = widened;
      auto exe = cpu::make_cpu_backend()->compile(std::move(m), options);
      EXPECT_NE(exe->describe().find("first-max loop"), std::string::npos) << exe->describe();
      const HostTensor got = exe->run(args)[0];
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), static_cast<size_t>(want.shape().byte_size())), 0);
    }
  }
}

TEST(OnednnPoolingTest, MaxGradientGoesToTheFirstMaximumOnTies) {
  for (const PoolCase& c : cases()) expect_pool_ops_match(c, ReduceKind::kMax, DType::kF32, 1e-6, /*ties=*/true);
}

TEST(OnednnPoolingTest, WindowsWhollyInPaddingFallBackToTheReference) {
  // The first window along H lies in the padding: -inf (max) and 0 (mean) in Kiln.
  const PoolCase c{"padded", {1, 4, 4, 2}, {2, 2}, {2, 2}, {2, 0}, {0, 0}};
  const Window w = window_of(c);
  const Shape xs(DType::kF32, c.x), ys(DType::kF32, pooled_dims(c.x, w));
  std::string steps;
  expect_matches_reference({xs, ys}, [&](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.reduce_window(p[0], ReduceKind::kMax, w),
                                     b.reduce_window(p[0], ReduceKind::kMean, w),
                                     b.reduce_window_grad(p[0], p[1], ReduceKind::kMax, w)};
  }, {.steps = &steps});
  EXPECT_NE(steps.find("reference reduce_window"), std::string::npos) << steps;
}

TEST(OnednnPoolingTest, PoolingOverChannelsFallsBackToTheReference) {
  const Window w{.size = {1, 1, 1, 2}, .strides = {1, 1, 1, 2}, .padding_low = {0, 0, 0, 0},
                 .padding_high = {0, 0, 0, 0}};
  const Shape xs(DType::kF32, {2, 3, 3, 4});
  std::string steps;
  expect_matches_reference({xs}, [&](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.reduce_window(p[0], ReduceKind::kMax, w)};
  }, {.steps = &steps});
  EXPECT_NE(steps.find("reference reduce_window"), std::string::npos) << steps;
}

}  // namespace
}  // namespace kiln::cpu
