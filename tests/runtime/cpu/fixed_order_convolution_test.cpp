// The batch-invariant convolution: values against the reference evaluator's f64 convolution
// (padding, strides, dilation, groups, 16-bit storage), and each image's output bit for bit
// the same when it is convolved alone as inside a batch.
#include "kiln/runtime/cpu/fixed_order_convolution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/ir/reference_eval.h"
#include "tests/testing/backend_conformance.h"

namespace kiln::cpu {
namespace {

struct Conv {
  ir::Module module{"m"};
  ir::Instruction* conv = nullptr;
  Conv(DType t, const Dims& x, const Dims& w, const ir::ConvDims& dims) {
    ir::Builder b(module.entry());
    ir::Instruction* px = b.parameter(Shape(t, x), "x");  // parameters in operand order
    conv = b.convolution(px, b.parameter(Shape(t, w), "w"), dims);
    module.entry()->set_outputs({conv});
  }
};

struct Case {
  const char* name;
  DType t;
  Dims x, w;
  ir::ConvDims dims;
};

std::vector<Case> cases() {
  return {
      {"3x3 valid", DType::kF32, {5, 9, 8, 3}, {3, 3, 3, 40}, {}},
      {"same padding, stride 2", DType::kF32, {5, 9, 8, 3}, {3, 3, 3, 7}, {.strides = {2, 2}, .padding_low = {1, 1}, .padding_high = {1, 1}}},
      {"dilated, asymmetric padding", DType::kF32, {3, 10, 7, 4}, {3, 2, 4, 5}, {.padding_low = {0, 1}, .padding_high = {2, 0}, .dilation = {2, 1}}},
      {"groups 2", DType::kF32, {3, 6, 6, 4}, {3, 3, 2, 6}, {.padding_low = {1, 1}, .padding_high = {1, 1}, .groups = 2}},
      {"depthwise", DType::kF32, {3, 6, 6, 4}, {3, 3, 1, 4}, {.padding_low = {1, 1}, .padding_high = {1, 1}, .groups = 4}},
      {"bf16", DType::kBF16, {5, 9, 8, 3}, {3, 3, 3, 40}, {.padding_low = {1, 1}, .padding_high = {1, 1}}},
  };
}

TEST(FixedOrderConvolutionTest, MatchesTheReferenceConvolution) {
  for (const Case& c : cases()) {
    Conv k(c.t, c.x, c.w, c.dims);
    std::unique_ptr<FixedOrderConvolution> f = FixedOrderConvolution::create(*k.conv);
    ASSERT_NE(f, nullptr) << c.name;
    const HostTensor x = testing::random_tensor(Shape(c.t, c.x), 1), w = testing::random_tensor(Shape(c.t, c.w), 2);
    HostTensor out(k.conv->shape());
    const void* in[2] = {x.raw_data(), w.raw_data()};
    f->run(in, out.raw_data());
    Conv ref(DType::kF64, c.x, c.w, c.dims);
    const std::vector<HostTensor> args{x.astype(DType::kF64), w.astype(DType::kF64)};
    const std::vector<double> want = ir::evaluate(ref.module, args)[0].to_vector<double>();
    const std::vector<double> got = out.to_vector<double>();
    const double tol = c.t == DType::kBF16 ? 1.0 / 64 : 1e-5;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << c.name << " element " << i;
  }
}

TEST(FixedOrderConvolutionTest, AnImageHasTheSameBitsAloneAsInItsBatch) {
  for (const Case& c : cases()) {
    Conv batch(c.t, c.x, c.w, c.dims);
    Dims one = c.x;
    one[0] = 1;
    Conv single(c.t, one, c.w, c.dims);
    const HostTensor x = testing::random_tensor(Shape(c.t, c.x), 3), w = testing::random_tensor(Shape(c.t, c.w), 4);
    HostTensor all(batch.conv->shape()), alone(single.conv->shape());
    const void* in[2] = {x.raw_data(), w.raw_data()};
    FixedOrderConvolution::create(*batch.conv)->run(in, all.raw_data());
    const HostTensor image = x.slice_rows(2, 3);
    const void* in1[2] = {image.raw_data(), w.raw_data()};
    FixedOrderConvolution::create(*single.conv)->run(in1, alone.raw_data());
    const size_t bytes = static_cast<size_t>(alone.byte_size());
    EXPECT_EQ(std::memcmp(alone.raw_data(), static_cast<const char*>(all.raw_data()) + 2 * bytes, bytes), 0) << c.name;
  }
}

}  // namespace
}  // namespace kiln::cpu
