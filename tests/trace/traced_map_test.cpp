// Dataset::map of a function written with Kiln ops: traced once per shape, batched under
// map_and_batch, the values of an independently written loop, and clear errors for a wrong
// arity, a variable read, and an input without a static shape.
#include "kiln/trace/traced_map.h"

#include <gtest/gtest.h>

#include <tuple>

#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/variable.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

// The seed's preprocess, written as its tf.data original is.
std::tuple<Tensor, Tensor> preprocess(Tensor image, Tensor label) {
  image = cast(image, DType::kF32) / 255.0;
  image = expand_dims(image, -1);
  return {image, cast(label, DType::kI32)};
}

struct Images {
  HostTensor x, y;
};

Images images(int64_t n) {
  std::vector<uint8_t> px(static_cast<size_t>(n * 28 * 28)), lb(static_cast<size_t>(n));
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * 37 + i / 5) % 256);
  for (size_t i = 0; i < lb.size(); ++i) lb[i] = static_cast<uint8_t>(i % 10);
  return {HostTensor::from_vector<uint8_t>({n, 28, 28}, px), HostTensor::from_vector<uint8_t>({n}, lb)};
}

// The batches, with each pixel checked against float(p) / 255 computed here.
void expect_preprocessed(data::Dataset ds, const Images& in, int64_t batch, int64_t expected_batches) {
  data::Iterator it = ds.iterator();
  const auto px = in.x.to_vector<uint8_t>();
  int64_t b = 0, row = 0;
  while (std::optional<data::Element> e = it.next()) {
    ASSERT_EQ(e->size(), 2u);
    const HostTensor& x = (*e)[0];
    ASSERT_EQ(x.dtype(), DType::kF32);
    ASSERT_EQ(x.dims(), (Dims{std::min<int64_t>(batch, in.x.dims()[0] - row), 28, 28, 1}));
    ASSERT_EQ((*e)[1].dtype(), DType::kI32);
    const auto got = x.to_vector<float>();
    const auto labels = (*e)[1].to_vector<int32_t>();
    for (size_t i = 0; i < got.size(); ++i) {
      const float want = static_cast<float>(px[static_cast<size_t>(row) * 784 + i]) / 255.0f;
      ASSERT_NEAR(got[i], want, 1e-7f) << "batch " << b << " value " << i;
    }
    for (size_t r = 0; r < labels.size(); ++r) EXPECT_EQ(labels[r], static_cast<int32_t>((row + r) % 10));
    row += x.dims()[0];
    ++b;
  }
  EXPECT_EQ(b, expected_batches);
}

TEST(TracedMapTest, TheSeedPreprocessFusedWithBatchGivesTheLoopsValues) {
  const Images in = images(70);
  for (const bool drop : {false, true}) {
    data::Dataset ds = data::Dataset::from_tensor_slices({in.x, in.y})
                           .map(preprocess, {.num_parallel_calls = 2, .name = "preprocess"})
                           .batch(16, drop);
    expect_preprocessed(ds, in, 16, drop ? 4 : 5);
    data::Iterator it = ds.iterator();
    it.next();
    ASSERT_EQ(it.stats().stages.size(), 2u);
    EXPECT_EQ(it.stats().stages[1].name, "map_and_batch");  // stateless, so fused
  }
}

TEST(TracedMapTest, InlineAndParallelElementMapsGiveTheSameValues) {
  const Images in = images(20);
  for (const int calls : {0, 2}) {
    data::Dataset ds = data::Dataset::from_tensor_slices({in.x, in.y}).map(preprocess, calls).batch(8);
    expect_preprocessed(ds, in, 8, 3);
  }
}

TEST(TracedMapTest, ALambdaReturningOneTensorAndTheSeedsOrderOfStages) {
  const Images in = images(30);
  data::Dataset ds = data::Dataset::from_tensor_slices({in.x})
                         .map([](Tensor x) { return reduce_sum(cast(x, DType::kF32)); },
                              {.num_parallel_calls = data::kAutotune})
                         .shuffle(10, 3)
                         .repeat(2)
                         .batch(6, true)
                         .prefetch();
  data::Iterator it = ds.iterator();
  int64_t batches = 0;
  double total = 0;
  while (std::optional<data::Element> e = it.next()) {
    ++batches;
    for (float v : (*e)[0].to_vector<float>()) total += v;
  }
  EXPECT_EQ(batches, 10);
  double want = 0;
  for (uint8_t p : in.x.to_vector<uint8_t>()) want += 2.0 * p;
  EXPECT_DOUBLE_EQ(total, want);  // every element twice, whatever the shuffle
}

TEST(TracedMapTest, TracesOncePerShapeAndRunsBatchesAsOneProgram) {
  trace::TracedMap m("double", 1, [](const std::vector<Tensor>& x) { return std::vector<Tensor>{x[0] * 2.0}; });
  auto batch = [](int64_t n) { return std::vector<HostTensor>{HostTensor(Shape(DType::kF32, {n, 3}))}; };
  for (int i = 0; i < 3; ++i) m.run_batched(batch(4));
  EXPECT_EQ(m.trace_count(), 1);
  m.run_batched(batch(2));  // a short last batch: its own program
  EXPECT_EQ(m.trace_count(), 2);
  EXPECT_EQ(m.not_batched_reason(), "");
  std::vector<HostTensor> out = m.run({HostTensor::from_vector<float>({3}, {1, 2, 3})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(m.trace_count(), 3);
}

TEST(TracedMapTest, AFunctionWithoutABatchingRuleRunsRowByRowWithTheSameValues) {
  trace::TracedMap m("gram", 1, [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{matmul(x[0], transpose(x[0]))};
  });
  HostTensor b = HostTensor::from_vector<float>({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0});
  std::vector<HostTensor> out = m.run_batched({b});
  EXPECT_NE(m.not_batched_reason().find("dot_general"), std::string::npos);
  ASSERT_EQ(out[0].dims(), (Dims{2, 2, 2}));
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{5, 11, 11, 25, 1, 0, 0, 1}));
}

TEST(TracedMapTest, AWrongArityNamesTheFunctionAndTheElement) {
  const Images in = images(4);
  data::Dataset ds = data::Dataset::from_tensor_slices({in.x, in.y, in.y})
                         .map(preprocess, {.num_parallel_calls = 2, .name = "preprocess"})
                         .batch(2);
  data::Iterator it = ds.iterator();
  KILN_EXPECT_ERROR(it.next(), DataError, "[map 'preprocess'] the function takes 2 components");
  data::Iterator inline_it = data::Dataset::from_tensor_slices({in.x}).map(preprocess, {.name = "preprocess"}).iterator();
  KILN_EXPECT_ERROR(inline_it.next(), DataError, "the element (u8[28,28]) has 1");
}

TEST(TracedMapTest, AnInputWithoutAStaticShapeIsAnErrorNamingTheFunction) {
  int64_t n = 0;
  data::Dataset ds = data::Dataset::from_generator([&n] {
                       n = 0;
                       return [&n]() -> std::optional<data::Element> {
                         if (n == 20) return std::nullopt;
                         ++n;
                         return data::Element{HostTensor(Shape(DType::kF32, {n}))};
                       };
                     }).map([](Tensor x) { return x + 1.0; }, {.name = "plus_one"});
  data::Iterator it = ds.iterator();
  for (int i = 0; i < trace::TracedMap::kMaxSignatures; ++i) ASSERT_TRUE(it.next().has_value());
  KILN_EXPECT_ERROR(it.next(), DataError, "[map 'plus_one'] the function has been traced for 8 element shapes");
}

TEST(TracedMapTest, ReadingAVariableIsAnError) {
  Variable v("scale", HostTensor::from_vector<float>({3}, {1, 2, 3}));
  trace::TracedMap m("scaled", 1, [&](const std::vector<Tensor>& x) { return std::vector<Tensor>{x[0] * v.read()}; });
  KILN_EXPECT_ERROR(m.run({HostTensor(Shape(DType::kF32, {3}))}), DataError, "reads the variable 'scale'");
}

}  // namespace
}  // namespace kiln
