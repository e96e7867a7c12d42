// Convolution in the reference evaluator: hand-computed cases, an independent naive loop over
// an explicitly padded input, and the adjoint identities that make the backward forms the
// exact transposes of the forward op.
#include <gtest/gtest.h>

#include "tests/ir/reference_eval_test.h"

namespace kiln::ir {
namespace {

using ConvolutionTest = ReferenceEvalFixture;

std::vector<float> iota_values(int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  return v;
}

TEST_F(ConvolutionTest, ComputesA3x3InputByHand) {
  auto* x = arg<float>({1, 3, 3, 1}, iota_values(9));
  auto* diag = arg<float>({2, 2, 1, 1}, {1, 0, 0, 1});
  EXPECT_EQ(eval_as<float>(b_.convolution(x, diag, {})), (std::vector<float>{6, 8, 12, 14}));
}

TEST_F(ConvolutionTest, HonoursStrideAndPadding) {
  auto* x = arg<float>({1, 3, 3, 1}, iota_values(9));
  auto* ones = arg<float>({3, 3, 1, 1}, std::vector<float>(9, 1.f));
  HostTensor y = eval(b_.convolution(x, ones, {.strides = {2, 2}, .padding_low = {1, 1}, .padding_high = {1, 1}}));
  EXPECT_EQ(y.shape(), Shape(DType::kF32, {1, 2, 2, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{12, 16, 24, 28}));
}

TEST_F(ConvolutionTest, DilatesTheFilter) {
  auto* x = arg<float>({1, 3, 3, 1}, iota_values(9));
  auto* ones = arg<float>({2, 2, 1, 1}, {1, 1, 1, 1});
  EXPECT_EQ(eval_as<float>(b_.convolution(x, ones, {.dilation = {2, 2}})), (std::vector<float>{1 + 3 + 7 + 9}));
}

TEST_F(ConvolutionTest, GroupsSeeOnlyTheirChannels) {
  auto* x = arg<float>({1, 1, 1, 4}, {1, 2, 3, 4});
  auto* w = arg<float>({1, 1, 2, 2}, {1, 10, 100, 1000});  // w[c][f]
  // Output 0 reads channels 0,1 with w[.][0]; output 1 reads channels 2,3 with w[.][1].
  EXPECT_EQ(eval_as<float>(b_.convolution(x, w, {.groups = 2})), (std::vector<float>{201, 4030}));
}

struct ConvCase {
  Dims x, w;
  ConvDims conv;
};

std::vector<ConvCase> conv_cases() {
  return {
      {{2, 5, 5, 3}, {3, 3, 3, 4}, {}},
      {{1, 6, 7, 2}, {3, 2, 2, 3}, {.strides = {2, 3}, .padding_low = {1, 0}, .padding_high = {2, 1}}},
      {{2, 7, 6, 2}, {2, 3, 2, 2}, {.strides = {1, 2}, .padding_low = {2, 1}, .padding_high = {0, 2}, .dilation = {2, 2}}},
      {{1, 5, 5, 4}, {3, 3, 2, 6}, {.strides = {2, 2}, .padding_low = {1, 1}, .padding_high = {1, 1}, .groups = 2}},
      {{1, 4, 4, 6}, {2, 2, 1, 6}, {.padding_high = {1, 1}, .dilation = {1, 2}, .groups = 6}},
  };
}

TEST_F(ConvolutionTest, MatchesANaiveLoopOverAnExplicitlyPaddedInput) {
  std::mt19937 gen(7);
  for (const ConvCase& c : conv_cases()) {
    Module m("conv");
    Builder b(m.entry());
    HostTensor xv = random_f64(c.x, gen), wv = random_f64(c.w, gen);
    auto* xp = b.parameter(xv.shape(), "x");
    auto* y = b.convolution(xp, b.parameter(wv.shape(), "w"), c.conv);
    m.entry()->set_outputs({y});
    std::vector<HostTensor> args = {xv, wv};
    HostTensor got = evaluate(m, args)[0];

    const ConvDims& v = c.conv;
    const int64_t n_ = c.x[0], h = c.x[1], w = c.x[2], ch = c.x[3];
    const int64_t ph = h + v.padding_low[0] + v.padding_high[0], pw = w + v.padding_low[1] + v.padding_high[1];
    std::vector<double> padded(static_cast<size_t>(n_ * ph * pw * ch), 0.0);
    auto xd = xv.data<double>();
    for (int64_t n = 0; n < n_; ++n)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j)
          for (int64_t k = 0; k < ch; ++k)
            padded[static_cast<size_t>(((n * ph + i + v.padding_low[0]) * pw + j + v.padding_low[1]) * ch + k)] =
                xd[static_cast<size_t>(((n * h + i) * w + j) * ch + k)];
    const Dims& yd = y->shape().dims();
    const int64_t kh_ = c.w[0], kw_ = c.w[1], cg = c.w[2], f_ = c.w[3], fg = f_ / v.groups;
    auto wd = wv.data<double>();
    auto gd = got.data<double>();
    for (int64_t n = 0; n < n_; ++n)
      for (int64_t oh = 0; oh < yd[1]; ++oh)
        for (int64_t ow = 0; ow < yd[2]; ++ow)
          for (int64_t f = 0; f < f_; ++f) {
            double s = 0;
            for (int64_t kh = 0; kh < kh_; ++kh)
              for (int64_t kw = 0; kw < kw_; ++kw)
                for (int64_t k = 0; k < cg; ++k) {
                  const int64_t i = oh * v.strides[0] + kh * v.dilation[0];
                  const int64_t j = ow * v.strides[1] + kw * v.dilation[1];
                  s += padded[static_cast<size_t>(((n * ph + i) * pw + j) * ch + (f / fg) * cg + k)] *
                       wd[static_cast<size_t>(((kh * kw_ + kw) * cg + k) * f_ + f)];
                }
            EXPECT_NEAR(gd[static_cast<size_t>(((n * yd[1] + oh) * yd[2] + ow) * f_ + f)], s, 1e-12);
          }
  }
}

TEST_F(ConvolutionTest, BackwardFormsAreTheAdjointsOfTheForwardOp) {
  // <conv(x, w), dy> == <x, conv_backward_input(dy, w)> == <w, conv_backward_filter(x, dy)>.
  std::mt19937 gen(11);
  for (const ConvCase& c : conv_cases()) {
    Module m("adjoint");
    Builder b(m.entry());
    HostTensor xv = random_f64(c.x, gen), wv = random_f64(c.w, gen);
    auto* x = b.parameter(xv.shape(), "x");
    auto* w = b.parameter(wv.shape(), "w");
    auto* y = b.convolution(x, w, c.conv);
    HostTensor dyv = random_f64(y->shape().dims(), gen);
    auto* dy = b.parameter(dyv.shape(), "dy");
    auto* dx = b.conv_backward_input(dy, w, x->shape(), c.conv);
    auto* dw = b.conv_backward_filter(x, dy, w->shape(), c.conv);
    m.entry()->set_outputs({y, dx, dw});
    std::vector<HostTensor> args = {xv, wv, dyv};
    auto out = evaluate(m, args);
    const double forward = inner_product(out[0], dyv);
    EXPECT_NEAR(inner_product(xv, out[1]), forward, 1e-10 * (1 + std::abs(forward)));
    EXPECT_NEAR(inner_product(wv, out[2]), forward, 1e-10 * (1 + std::abs(forward)));
  }
}

TEST_F(ConvolutionTest, Bf16ConvolutionRoundsTheF32Sum) {
  auto* x = arg(HostTensor::from_vector<float>({1, 1, 3, 1}, {1.f, 0.00390625f, 0.00390625f}).astype(DType::kBF16));
  auto* w = arg(HostTensor::from_vector<float>({1, 3, 1, 1}, {1, 1, 1}).astype(DType::kBF16));
  HostTensor y = eval(b_.convolution(x, w, {}));
  EXPECT_EQ(y.dtype(), DType::kBF16);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1.0078125f}));
}

}  // namespace
}  // namespace kiln::ir
