// cuDNN convolutions and pooling in the CUDA backend: on a GPU, every convolution op
// (forward, backward input, backward filter, and forward with a bias/relu epilogue) and max
// and mean pooling with their gradients against the reference evaluator, over strides,
// padding, dilation and groups; without one those skip, naming why. The lowering decisions
// and cuDNN's loading are checked here without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kiln/ir/builder.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/cuda/cudnn_ops_impl.h"
#include "tests/testing/backend_conformance.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/gpu_backend.h"

namespace kiln::cuda {
namespace {

using ir::Builder;
using ir::ConvDims;
using ir::Instruction;
using ir::Opcode;

struct ConvCase {
  Dims x, w;  // NHWC, HWIO
  ConvDims dims;
};

// 3x3 valid (the convnet's), stride 2 with padding 1, dilation 2, a 1x1 and 5x5 'same',
// grouped (2 groups), and an odd width with stride 3.
const ConvCase kConvCases[] = {
    {{4, 12, 12, 3}, {3, 3, 3, 8}, {}},
    {{2, 11, 9, 4}, {3, 3, 4, 6}, {.strides = {2, 2}, .padding_low = {1, 1}, .padding_high = {1, 1}}},
    {{3, 13, 13, 2}, {3, 3, 2, 5}, {.padding_low = {2, 2}, .padding_high = {2, 2}, .dilation = {2, 2}}},
    {{2, 7, 7, 16}, {1, 1, 16, 4}, {}},
    {{1, 10, 10, 3}, {5, 5, 3, 7}, {.padding_low = {2, 2}, .padding_high = {2, 2}}},
    {{2, 8, 8, 6}, {3, 3, 3, 4}, {.padding_low = {1, 1}, .padding_high = {1, 1}, .groups = 2}},
    {{2, 17, 14, 3}, {2, 3, 3, 5}, {.strides = {3, 2}}},
};

// 'same' with an even kernel (TensorFlow's extra row and column at the end), stride 2 with
// more padding below than above in one dim, and grouped with padding 0/1 and 1/2.
const ConvCase kAsymmetricConvCases[] = {
    {{2, 8, 8, 3}, {2, 2, 3, 4}, {.padding_low = {0, 0}, .padding_high = {1, 1}}},
    {{2, 9, 7, 2}, {4, 3, 2, 3}, {.strides = {2, 1}, .padding_low = {2, 1}, .padding_high = {1, 1}}},
    {{1, 10, 10, 4}, {3, 3, 2, 4}, {.strides = {2, 2}, .padding_low = {0, 1}, .padding_high = {1, 2}, .groups = 2}},
};

// `n` geometries drawn from `seed`: kernels 1-4, strides 1-3, dilation 1-2, symmetric padding
// below the kernel's extent, 1 or 2 groups, sizes that leave at least one output position.
std::vector<ConvCase> random_conv_cases(uint32_t seed, int n) {
  std::mt19937 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::vector<ConvCase> cases;
  while (static_cast<int>(cases.size()) < n) {
    ConvCase c;
    const int64_t groups = pick(1, 2), in = groups * pick(1, 4), out = groups * pick(1, 4);
    c.w = {pick(1, 4), pick(1, 4), in / groups, out};
    c.x = {pick(1, 3), pick(4, 15), pick(4, 15), in};
    c.dims.groups = groups;
    for (size_t i = 0; i < 2; ++i) {
      c.dims.strides[i] = pick(1, 3);
      c.dims.dilation[i] = pick(1, 2);
      const int64_t extent = (c.w[i] - 1) * c.dims.dilation[i] + 1;
      c.dims.padding_low[i] = c.dims.padding_high[i] = pick(0, extent - 1);
    }
    bool fits = true;
    for (size_t i = 0; i < 2; ++i)
      fits = fits && c.x[1 + i] + 2 * c.dims.padding_low[i] >= (c.w[i] - 1) * c.dims.dilation[i] + 1;
    if (fits) cases.push_back(c);
  }
  return cases;
}

// The fixed cases and eight random ones.
std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> cases(std::begin(kConvCases), std::end(kConvCases));
  for (const ConvCase& c : random_conv_cases(17, 8)) cases.push_back(c);
  return cases;
}

Shape conv_output(const ConvCase& c, DType t) {
  ir::Module m("shape");
  Builder b(m.entry());
  return b.convolution(b.parameter(Shape(t, c.x), "x"), b.parameter(Shape(t, c.w), "w"), c.dims)->shape();
}

// The forward convolution and both gradients of case `c` in `t` against the reference.
void expect_conv_ops_match_reference(runtime::Backend* backend, const ConvCase& c, DType t) {
  const double tol = t == DType::kF32 ? 1e-4 : 3e-2;
  SCOPED_TRACE(str_cat(name(t), " x ", Shape(t, c.x), " w ", Shape(t, c.w), " strides ", c.dims.strides[0], "x",
                       c.dims.strides[1], " padding ", c.dims.padding_low[0], "/", c.dims.padding_high[0], "x",
                       c.dims.padding_low[1], "/", c.dims.padding_high[1], " dilation ", c.dims.dilation[0], "x",
                       c.dims.dilation[1], " groups ", c.dims.groups));
  const Shape xs(t, c.x), ws(t, c.w), ys = conv_output(c, t);
  std::string steps;
  testing::expect_matches_reference(
      {xs, ws}, [&](Builder& b, auto& p) { return std::vector<Instruction*>{b.convolution(p[0], p[1], c.dims)}; },
      {.tol = tol, .backend = backend, .steps = &steps});
  EXPECT_NE(steps.find("convolution(cudnn"), std::string::npos) << steps;
  testing::expect_matches_reference(
      {ys, ws},
      [&](Builder& b, auto& p) { return std::vector<Instruction*>{b.conv_backward_input(p[0], p[1], xs, c.dims)}; },
      {.tol = tol, .backend = backend});
  testing::expect_matches_reference(
      {xs, ys},
      [&](Builder& b, auto& p) { return std::vector<Instruction*>{b.conv_backward_filter(p[0], p[1], ws, c.dims)}; },
      {.tol = tol, .backend = backend});
}

// A program of case `c`'s convolution and both its gradients (f32), in that order.
std::unique_ptr<ir::Module> conv_ops_module(const ConvCase& c) {
  auto m = std::make_unique<ir::Module>("conv");
  Builder b(m->entry());
  const Shape xs(DType::kF32, c.x), ws(DType::kF32, c.w), ys = conv_output(c, DType::kF32);
  Instruction* x = b.parameter(xs, "x");
  Instruction* w = b.parameter(ws, "w");
  Instruction* dy = b.parameter(ys, "dy");
  m->entry()->set_outputs({b.convolution(x, w, c.dims), b.conv_backward_input(dy, w, xs, c.dims),
                           b.conv_backward_filter(x, dy, ws, c.dims)});
  return m;
}

TEST(CudnnConvolutionTest, ForwardAndBothGradientsMatchTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  for (DType t : {DType::kF32, DType::kBF16})
    for (const ConvCase& c : conv_cases()) expect_conv_ops_match_reference(backend.get(), c, t);
}

// More padding on one side than the other: x padded by a loop kernel, cuDNN's symmetric
// rest, the data gradient sliced back.
TEST(CudnnConvolutionTest, AsymmetricPaddingMatchesTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  for (DType t : {DType::kF32, DType::kBF16})
    for (const ConvCase& c : kAsymmetricConvCases) expect_conv_ops_match_reference(backend.get(), c, t);
}

// The output fusion (conv + bias + relu) runs as the cuDNN call and one epilogue loop kernel.
TEST(CudnnConvolutionTest, BiasAndReluEpilogueMatchTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  std::string steps;
  testing::expect_matches_reference(
      {Shape(DType::kF32, {8, 14, 14, 3}), Shape(DType::kF32, {3, 3, 3, 16}), Shape(DType::kF32, {16})},
      [](Builder& b, auto& p) {
        Instruction* y = b.convolution(p[0], p[1], {});
        y = b.binary(Opcode::kAdd, y, b.broadcast_in_dim(p[2], y->shape().dims(), {3}));
        return std::vector<Instruction*>{b.binary(Opcode::kMax, y, b.full(y->shape(), 0.0))};
      },
      {.tol = 1e-4, .backend = backend.get(), .steps = &steps});
  EXPECT_NE(steps.find("convolution(cudnn"), std::string::npos) << steps;
}

struct PoolCase {
  Dims x;
  ir::Window window;
};

ir::Window spatial(int64_t k, int64_t s, int64_t pad) { return {{1, k, k, 1}, {1, s, s, 1}, {0, pad, pad, 0}, {0, pad, pad, 0}}; }

// The convnet's 2x2/2 (even and odd sizes), overlapping 3x3/1 and 3x3/2 with padding 1.
const PoolCase kPoolCases[] = {
    {{4, 26, 26, 32}, spatial(2, 2, 0)},
    {{4, 11, 11, 8}, spatial(2, 2, 0)},
    {{2, 9, 9, 5}, spatial(3, 1, 0)},
    {{2, 10, 7, 3}, spatial(3, 2, 1)},
};

// Keras 'same' max pooling: 2x2/2 on 7x7 (padding 0/1), 3x3/2 on 9x10 (1/1 and 0/1).
const PoolCase kAsymmetricMaxPoolCases[] = {
    {{2, 7, 7, 3}, {{1, 2, 2, 1}, {1, 2, 2, 1}, {0, 0, 0, 0}, {0, 1, 1, 0}}},
    {{2, 9, 10, 4}, {{1, 3, 3, 1}, {1, 2, 2, 1}, {0, 1, 0, 0}, {0, 1, 1, 0}}},
};

// Pooling of `kind` and its gradient for case `c` in `t` against the reference. The max
// gradient goes to the first maximum of each window in the reference: relu'd inputs tie at 0
// in many windows, which checks cuDNN does the same.
void expect_pooling_matches_reference(runtime::Backend* backend, const PoolCase& c, DType t, ir::ReduceKind kind) {
  SCOPED_TRACE(str_cat(name(t), " ", ir::reduce_kind_name(kind), " x ", Shape(t, c.x), " window ", c.window.size[1],
                       " stride ", c.window.strides[1], " pad ", c.window.padding_low[1], "/", c.window.padding_high[1],
                       "x", c.window.padding_low[2], "/", c.window.padding_high[2]));
  ir::Module shape_m("shape");
  Builder sb(shape_m.entry());
  const Shape ys = sb.reduce_window(sb.parameter(Shape(t, c.x), "x"), kind, c.window)->shape();
  std::string steps;
  testing::expect_matches_reference(
      {Shape(t, c.x), ys},
      [&](Builder& b, auto& p) {
        Instruction* x = b.binary(Opcode::kMax, p[0], b.full(p[0]->shape(), 0.0));
        return std::vector<Instruction*>{b.reduce_window(x, kind, c.window), b.reduce_window_grad(x, p[1], kind, c.window)};
      },
      {.tol = t == DType::kF32 ? 1e-5 : 3e-2, .backend = backend, .steps = &steps});
  EXPECT_NE(steps.find("_pool(cudnn"), std::string::npos) << steps;
}

TEST(CudnnPoolingTest, MaxAndMeanPoolingAndGradientsMatchTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  for (DType t : {DType::kF32, DType::kBF16})
    for (const PoolCase& c : kPoolCases)
      for (ir::ReduceKind kind : {ir::ReduceKind::kMax, ir::ReduceKind::kMean})
        expect_pooling_matches_reference(backend.get(), c, t, kind);
}

// Keras 'same' max pooling on odd sizes (one more padded row and column at the end): x padded
// with -inf by a loop kernel, the gradient sliced back.
TEST(CudnnPoolingTest, AsymmetricMaxPoolingMatchesTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  for (DType t : {DType::kF32, DType::kBF16})
    for (const PoolCase& c : kAsymmetricMaxPoolCases) expect_pooling_matches_reference(backend.get(), c, t, ir::ReduceKind::kMax);
}

// Without a GPU: cuDNN loads (it needs none to say its version), and ops cuDNN cannot run are
// a CompileError naming the op, the reason and the backend before anything runs.
TEST(CudnnLoweringTest, CudnnLoadsWithoutAGpu) { EXPECT_EQ(cudnn_version().rfind("9.", 0), 0u) << cudnn_version(); }

TEST(CudnnLoweringTest, AsymmetricMeanPoolingPaddingIsACompileErrorNamingOpAndReason) {
  auto m = std::make_unique<ir::Module>("same_even_window");
  Builder b(m->entry());
  Instruction* x = b.parameter(Shape(DType::kF32, {2, 8, 8, 3}), "x");
  m->entry()->set_outputs({b.reduce_window(x, ir::ReduceKind::kMean, {{1, 3, 3, 1}, {1, 1, 1, 1}, {0, 0, 0, 0}, {0, 1, 1, 0}})});
  KILN_EXPECT_ERROR(lower_to_ptx(*m, 90), CompileError,
                    "[cuda] same_even_window: the cuda backend has no kernel yet for reduce_window (padding 0/1: cuDNN "
                    "pads both sides alike, and mean pooling's divisor excludes only its own padding)");
}

// Asymmetric max pooling lowers (no GPU needed): a -inf padded copy of x before each cuDNN call
// and a slice kernel after the gradient, accepted by ptxas; cuDNN's output size for the padded
// x is Kiln's.
TEST(CudnnLoweringTest, AsymmetricMaxPoolingLowersToAPaddedCopyAndASlice) {
  for (const PoolCase& c : kAsymmetricMaxPoolCases) {
    auto m = std::make_unique<ir::Module>("pool");
    Builder b(m->entry());
    Instruction* x = b.parameter(Shape(DType::kF32, c.x), "x");
    Instruction* y = b.reduce_window(x, ir::ReduceKind::kMax, c.window);
    Instruction* dy = b.parameter(y->shape(), "dy");
    m->entry()->set_outputs({y, b.reduce_window_grad(x, dy, ir::ReduceKind::kMax, c.window)});
    std::string why;
    const std::optional<PoolGeometry> g = PoolGeometry::of(*y, why);
    ASSERT_TRUE(g.has_value()) << why;
    EXPECT_TRUE(g->padded_explicitly());
    EXPECT_EQ(g->cudnn_output_dims(), y->shape().dims()) << g->label();
    const std::string ptx = lower_to_ptx(*m, 90);
    std::string log;
    ASSERT_EQ(testing::ptxas_sm90(KILN_CUDA_PTXAS, ptx, log), 0) << log;
    EXPECT_NE(ptx.find("_slice"), std::string::npos);
  }
}

// Asymmetric convolution padding lowers (no GPU needed): a padded copy of x before the forward
// and filter-gradient calls (a memset and a 3D copy, no kernel), a slice kernel after the data
// gradient, accepted by ptxas; cuDNN sees the padded x with the symmetric rest, and its output
// size is Kiln's.
TEST(CudnnLoweringTest, AsymmetricConvolutionPaddingLowersToAPaddedCopyAndASlice) {
  for (const ConvCase& c : kAsymmetricConvCases) {
    std::unique_ptr<ir::Module> m = conv_ops_module(c);
    const Instruction* y = m->entry()->outputs().at(0);
    const Shape ys = y->shape();
    std::string why;
    const std::optional<ConvGeometry> g = ConvGeometry::of(*y, why);
    ASSERT_TRUE(g.has_value()) << why;
    EXPECT_TRUE(g->padded_explicitly());
    EXPECT_EQ(g->op_x, c.x);
    for (size_t i = 0; i < 2; ++i) {
      const int64_t shared = std::min(c.dims.padding_low[i], c.dims.padding_high[i]);
      EXPECT_EQ(g->dims.padding_low[i], shared);
      EXPECT_EQ(g->dims.padding_high[i], shared);
      EXPECT_EQ(g->explicit_low[i], c.dims.padding_low[i] - shared);
      EXPECT_EQ(g->explicit_high[i], c.dims.padding_high[i] - shared);
      EXPECT_EQ(g->x[1 + i], c.x[1 + i] + g->explicit_low[i] + g->explicit_high[i]);
    }
    EXPECT_EQ(g->cudnn_output_dims(), ys.dims()) << g->label();
    EXPECT_NE(g->label().find("padded from f32[" + std::to_string(c.x[0])), std::string::npos) << g->label();
    const std::string ptx = lower_to_ptx(*m, 90);
    std::string log;
    ASSERT_EQ(testing::ptxas_sm90(KILN_CUDA_PTXAS, ptx, log), 0) << log;
    int entries = 0;
    for (size_t at = ptx.find(".entry"); at != std::string::npos; at = ptx.find(".entry", at + 1)) ++entries;
    // forward: the filter transpose; data gradient: transpose + slice; filter gradient: transpose
    EXPECT_EQ(entries, 4) << Shape(DType::kF32, c.x) << " w " << Shape(DType::kF32, c.w);
    EXPECT_NE(ptx.find("_slice"), std::string::npos);
  }
}

// cuDNN's own output sizes for the descriptors the calls use (x NHWC, w KRSC, padding,
// strides, dilation, groups; the pooling window) equal Kiln's shape inference, on every case
// of the GPU tests. cuDNN builds and checks descriptors without a GPU.
TEST(CudnnLoweringTest, CudnnDescriptorsGiveKilnsOutputShapes) {
  for (DType t : {DType::kF32, DType::kBF16}) {
    for (const ConvCase& c : conv_cases()) {
      ir::Module m("conv");
      Builder b(m.entry());
      Instruction* y = b.convolution(b.parameter(Shape(t, c.x), "x"), b.parameter(Shape(t, c.w), "w"), c.dims);
      std::string why;
      std::optional<ConvGeometry> g = ConvGeometry::of(*y, why);
      ASSERT_TRUE(g.has_value()) << why;
      EXPECT_EQ(g->cudnn_output_dims(), y->shape().dims()) << g->label();
      Instruction* dw = b.conv_backward_filter(b.parameter(Shape(t, c.x), "x2"), b.parameter(y->shape(), "dy"),
                                               Shape(t, c.w), c.dims);
      std::optional<ConvGeometry> gw = ConvGeometry::of(*dw, why);
      ASSERT_TRUE(gw.has_value()) << why;
      EXPECT_EQ(gw->cudnn_output_dims(), y->shape().dims()) << gw->label();
    }
    for (const PoolCase& c : kPoolCases) {
      ir::Module m("pool");
      Builder b(m.entry());
      Instruction* y = b.reduce_window(b.parameter(Shape(t, c.x), "x"), ir::ReduceKind::kMax, c.window);
      std::string why;
      std::optional<PoolGeometry> g = PoolGeometry::of(*y, why);
      ASSERT_TRUE(g.has_value()) << why;
      EXPECT_EQ(g->cudnn_output_dims(), y->shape().dims()) << g->label();
    }
  }
}

TEST(CudnnLoweringTest, ConvolutionsAndPoolingLowerToCudnnStepsWithFilterTransposes) {
  for (const ConvCase& c : conv_cases()) {
    std::unique_ptr<ir::Module> m = conv_ops_module(c);
    // The transposes are loop kernels in the PTX: one per filter read, one per filter gradient.
    const std::string ptx = lower_to_ptx(*m, 90);
    int entries = 0;
    for (size_t at = ptx.find(".entry"); at != std::string::npos; at = ptx.find(".entry", at + 1)) ++entries;
    EXPECT_EQ(entries, 3) << Shape(DType::kF32, c.x) << " w " << Shape(DType::kF32, c.w);
  }
}

}  // namespace
}  // namespace kiln::cuda
