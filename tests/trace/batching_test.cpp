// batch_module: the batched program of an element function gives, row for row, what the
// element program gives (both run on the reference evaluator), for every op with a batching
// rule; an op without one is refused with its name.
#include "kiln/trace/batching.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "kiln/ir/reference_eval.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/trace_context.h"

namespace kiln::trace {
namespace {

using ElementFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::unique_ptr<ir::Module> trace(const std::vector<Shape>& element, const ElementFn& fn) {
  TraceContext ctx("element_fn");
  std::vector<Tensor> out;
  {
    TraceScope scope(&ctx);
    std::vector<Tensor> in;
    for (const Shape& s : element) in.push_back(ctx.add_input(s, "x"));
    out = fn(in);
  }
  return ctx.finish(out);
}

HostTensor random_tensor(const Shape& shape, std::mt19937& rng) {
  HostTensor t(shape);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  std::uniform_int_distribution<int> d(0, 255);
  for (double& x : v) x = d(rng);
  if (shape.dtype() == DType::kU8) {
    std::vector<uint8_t> u(v.begin(), v.end());
    return HostTensor::from_vector<uint8_t>(shape.dims(), u);
  }
  std::vector<float> f;
  for (double x : v) f.push_back(static_cast<float>(x / 64.0 - 2.0));
  return HostTensor::from_vector<float>(shape.dims(), f);
}

Dims with_batch(int64_t n, const Dims& d) {
  Dims out{n};
  out.insert(out.end(), d.begin(), d.end());
  return out;
}

// Runs `fn` batched over `rows` random elements and row by row; expects equal bytes.
void expect_batches_like_rows(const std::vector<Shape>& element, const ElementFn& fn, int64_t rows = 5) {
  std::mt19937 rng(7);
  std::vector<HostTensor> batch;
  for (const Shape& s : element) batch.push_back(random_tensor(Shape(s.dtype(), with_batch(rows, s.dims())), rng));
  std::string why_not;
  std::unique_ptr<ir::Module> batched = batch_module(*trace(element, fn), rows, &why_not);
  ASSERT_NE(batched, nullptr) << why_not;
  std::vector<HostTensor> got = ir::evaluate(*batched, batch);
  std::unique_ptr<ir::Module> one = trace(element, fn);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<HostTensor> row;
    for (size_t c = 0; c < batch.size(); ++c) row.push_back(batch[c].slice_rows(r, r + 1).reshape(element[c].dims()));
    std::vector<HostTensor> want = ir::evaluate(*one, row);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      HostTensor g = got[k].slice_rows(r, r + 1).reshape(want[k].dims());
      ASSERT_EQ(g.shape(), want[k].shape()) << "output " << k;
      EXPECT_EQ(g.to_vector<double>(), want[k].to_vector<double>()) << "output " << k << " row " << r;
    }
  }
}

const Shape kImage(DType::kU8, {28, 28});
const Shape kLabel(DType::kU8, {});
const Shape kMatrix(DType::kF32, {3, 4});

TEST(BatchingTest, TheSeedPreprocess) {
  expect_batches_like_rows({kImage, kLabel}, [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{expand_dims(cast(x[0], DType::kF32) / 255.0, -1), cast(x[1], DType::kI32)};
  });
}

TEST(BatchingTest, ElementwiseWithBroadcastConstantsAndSelect) {
  expect_batches_like_rows({kMatrix}, [](const std::vector<Tensor>& x) {
    Tensor bias = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
    Tensor y = exp(x[0] * 0.5) + bias;
    return std::vector<Tensor>{where(greater(x[0], 0.0), y, -y), maximum(x[0], 1.0)};
  });
}

TEST(BatchingTest, ShapeOps) {
  expect_batches_like_rows({kMatrix}, [](const std::vector<Tensor>& x) {
    Tensor t = transpose(x[0], {1, 0});
    Tensor s = slice(x[0], {1, 0}, {3, 4}, {1, 2});
    Tensor p = pad(x[0], {1, 0}, {0, 2}, -1.0);
    Tensor c = concat({x[0], Tensor::from_vector<float>({1, 4}, {9, 9, 9, 9})}, 0);
    Tensor r = reshape(x[0], {2, 6});
    Tensor b = broadcast_to(reshape(x[0], {3, 1, 4}), {3, 2, 4});
    return std::vector<Tensor>{t, s, p, c, r, b};
  });
}

TEST(BatchingTest, ReductionsArgmaxAndIota) {
  expect_batches_like_rows({kMatrix}, [](const std::vector<Tensor>& x) {
    Tensor i = cast(iota(Shape(DType::kF32, {3, 4}), 1), DType::kF32);
    return std::vector<Tensor>{reduce_sum(x[0] * i, {1}), reduce_max(x[0]), mean(x[0], {0}, true),
                               argmax(x[0], 1)};
  });
}

TEST(BatchingTest, AnOutputOfConstantsAloneIsRepeatedPerRow) {
  expect_batches_like_rows({kMatrix}, [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{x[0], Tensor::from_vector<float>({2}, {1.5f, -2.0f}) * 2.0};
  });
}

TEST(BatchingTest, AMatmulOfConstantsAloneStaysUnbatched) {
  expect_batches_like_rows({kMatrix}, [](const std::vector<Tensor>& x) {
    Tensor a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
    Tensor m = matmul(a, a);
    return std::vector<Tensor>{x[0] + reduce_sum(m)};
  });
}

TEST(BatchingTest, AnOpWithoutARuleOnABatchedValueIsRefusedByName) {
  std::unique_ptr<ir::Module> element = trace({kMatrix}, [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{matmul(x[0], transpose(x[0]))};
  });
  std::string why_not;
  EXPECT_EQ(batch_module(*element, 4, &why_not), nullptr);
  EXPECT_NE(why_not.find("dot_general"), std::string::npos) << why_not;
}

}  // namespace
}  // namespace kiln::trace
