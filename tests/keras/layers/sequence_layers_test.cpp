// The sequence-model layers: LayerNormalization, Embedding and MultiHeadAttention. Values
// against hand-computed numbers, gradients against central differences in f64 (through the
// layers' free functions, whose weights are inputs), the causal mask, configs and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/trace/ops/shape.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"

namespace kiln::keras {
namespace {

using kiln::testing::check_gradients;
using kiln::testing::random_f64;

TEST(LayerNormalizationTest, NormalizesTheLastAxisByHand) {
  LayerNormalization ln;
  Tensor y = ln(Tensor::from_vector<float>({2, 4}, {1, 2, 3, 4, 10, 10, 10, 10}));
  // Row 1: mean 2.5, biased variance 1.25; row 2 is constant, so it maps to 0.
  const double s = 1.0 / std::sqrt(1.25 + 1e-3);
  const std::vector<float> got = y.to_vector<float>();
  const std::vector<double> want = {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s, 0, 0, 0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  EXPECT_EQ(ln.weights()[0].name(), "layer_normalization/gamma");
  EXPECT_EQ(ln.weights()[1].name(), "layer_normalization/beta");
}

TEST(LayerNormalizationTest, ScalesAndShiftsAnyAxis) {
  LayerNormalization ln({.axis = 1, .epsilon = 0.5, .beta_initializer = Initializer("constant"),
                         .gamma_initializer = Initializer("constant")});
  ln.build(Dims{2, 3});
  ln.weights()[0].assign(Tensor::from_vector<float>({2}, {2, 3}));   // gamma
  ln.weights()[1].assign(Tensor::from_vector<float>({2}, {1, -1}));  // beta
  // x (1, 2, 3): normalized over axis 1 (pairs x[0][j], x[1][j]): values -+1 scaled by 1/sqrt(1 + 0.5).
  Tensor y = ln(Tensor::from_vector<float>({1, 2, 3}, {0, 1, 2, 2, 3, 4}));
  const double s = 1.0 / std::sqrt(1.0 + 0.5);
  const std::vector<float> got = y.to_vector<float>();
  const std::vector<double> want = {-2 * s + 1, -2 * s + 1, -2 * s + 1, 3 * s - 1, 3 * s - 1, 3 * s - 1};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(LayerNormalizationTest, GradientsMatchFiniteDifferences) {
  auto f = [](const std::vector<Tensor>& in) { return layer_normalization(in[0], in[1], in[2], -1, 1e-3); };
  EXPECT_TRUE(check_gradients(f, {random_f64({2, 3, 5}, 1), random_f64({5}, 2), random_f64({5}, 3)},
                              {.rtol = 1e-5, .atol = 1e-7}));
  auto middle_axis = [](const std::vector<Tensor>& in) { return layer_normalization(in[0], in[1], Tensor(), 1, 1e-2); };
  EXPECT_TRUE(check_gradients(middle_axis, {random_f64({2, 4, 3}, 4), random_f64({4}, 5)}, {.rtol = 1e-5, .atol = 1e-7}));
}

TEST(LayerNormalizationTest, ConfigRoundTripsAndKerasListAxesLoad) {
  LayerNormalization ln({.epsilon = 1e-5, .center = false, .name = "ln"});
  ln.build(Dims{7, 16});
  const std::string config = ln.get_config();
  for (const char* part : {"\"axis\":[2]", "\"epsilon\":1e-05", "\"center\":false", "\"scale\":true", "\"class_name\":\"Ones\""})
    EXPECT_NE(config.find(part), std::string::npos) << part << " not in " << config;
  LayerNormalization copy = LayerNormalization::from_config(config);
  copy.build(Dims{7, 16});
  EXPECT_EQ(copy.get_config(), config);
  EXPECT_EQ(copy.weights().size(), 1u);
  KILN_EXPECT_ERROR(LayerNormalization::from_config(R"({"axis": [1, 2]})"), ConfigError, "one axis");
  LayerNormalization bad({.name = "ln"});
  KILN_EXPECT_ERROR(bad(Tensor::from_vector<float>({3}, {1, 2, 3})), ValueError,
                    "[ln] axis=-1 is out of range for inputs of rank 1");
}

TEST(EmbeddingTest, LooksUpRowsAndScattersGradients) {
  Embedding emb(4, 2, {.embeddings_initializer = Initializer("random_uniform", 7)});
  Tensor out = emb(Tensor::from_vector<int32_t>({1, 3}, {3, 0, 3}));
  EXPECT_EQ(out.dims(), (Dims{1, 3, 2}));
  const std::vector<float> table = emb.embeddings().storage().to_vector<float>();
  for (float v : table) EXPECT_LE(std::abs(v), 0.05f);
  const std::vector<float> got = out.to_vector<float>();
  EXPECT_EQ(got, (std::vector<float>{table[6], table[7], table[0], table[1], table[6], table[7]}));
  // d/dtable of sum(w * take(table, ids)): repeated ids accumulate (scatter_add).
  auto f = [](const std::vector<Tensor>& in) { return take(in[0], in[1], 0); };
  EXPECT_TRUE(check_gradients(f, {random_f64({5, 3}, 8), HostTensor::from_vector<int32_t>({2, 3}, {4, 0, 4, 1, 4, 0})}));
  const std::string config = emb.get_config();
  EXPECT_NE(config.find("\"class_name\":\"RandomUniform\""), std::string::npos) << config;
  EXPECT_NE(config.find("\"minval\":-0.05"), std::string::npos) << config;
  EXPECT_EQ(Embedding::from_config(config).get_config(), config);
  KILN_EXPECT_ERROR(Embedding(0, 3), ValueError, "input_dim > 0");
}

// The tiny case: one head, key_dim 1, features 1, all kernels 1 and biases 0, so
// out_t = sum_s softmax_s(x_t x_s) x_s (over s <= t with the causal mask).
TEST(MultiHeadAttentionTest, TinyCaseMatchesHandComputedSoftmax) {
  const std::vector<double> x = {1, 2, 3};
  for (bool causal : {false, true}) {
    MultiHeadAttention mha(1, 1, {.kernel_initializer = "ones"});
    Tensor in = Tensor::from_vector<float>({1, 3, 1}, {1, 2, 3});
    const std::vector<float> got = mha(in, in, {.use_causal_mask = causal}).to_vector<float>();
    for (size_t t = 0; t < 3; ++t) {
      double num = 0, den = 0;
      for (size_t s = 0; s < 3; ++s) {
        if (causal && s > t) continue;
        num += std::exp(x[t] * x[s]) * x[s];
        den += std::exp(x[t] * x[s]);
      }
      EXPECT_NEAR(got[t], num / den, 1e-5) << "t=" << t << " causal=" << causal;
    }
  }
}

TEST(MultiHeadAttentionTest, KerasWeightLayoutAndOutputShape) {
  MultiHeadAttention mha(4, 8, {.value_dim = 6, .output_shape = 10});
  Tensor q = Tensor(HostTensor(Shape(DType::kF32, {2, 5, 12}))), v = Tensor(HostTensor(Shape(DType::kF32, {2, 7, 3})));
  EXPECT_EQ(mha(q, v).dims(), (Dims{2, 5, 10}));
  std::vector<std::string> names;
  std::vector<Dims> shapes;
  for (const Variable& w : mha.weights()) {
    names.push_back(w.name());
    shapes.push_back(w.shape().dims());
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "multi_head_attention/query/kernel", "multi_head_attention/query/bias",
                       "multi_head_attention/key/kernel", "multi_head_attention/key/bias",
                       "multi_head_attention/value/kernel", "multi_head_attention/value/bias",
                       "multi_head_attention/attention_output/kernel", "multi_head_attention/attention_output/bias"}));
  EXPECT_EQ(shapes, (std::vector<Dims>{{12, 4, 8}, {4, 8}, {3, 4, 8}, {4, 8}, {3, 4, 6}, {4, 6}, {4, 6, 10}, {10}}));
  const std::string config = mha.get_config();
  for (const char* part : {"\"num_heads\":4", "\"key_dim\":8", "\"value_dim\":6", "\"output_shape\":10",
                           "\"query_shape\":[null,5,12]", "\"value_shape\":[null,7,3]", "\"key_shape\":[null,7,3]"})
    EXPECT_NE(config.find(part), std::string::npos) << part << " not in " << config;
  KILN_EXPECT_ERROR(mha(q, Tensor(HostTensor(Shape(DType::kF32, {2, 7, 4})))), ShapeError, "built for query/value/key");
}

// Weights as f64 inputs: query, value, key, then the eight projections.
std::vector<HostTensor> attention_inputs(bool separate_key) {
  const int64_t b = 2, t = 3, s = separate_key ? 4 : 3, d = 4, h = 2, k = 3, v = 2, o = 3;
  return {random_f64({b, t, d}, 11), random_f64({b, s, d}, 12), random_f64({b, s, 5}, 13),
          random_f64({d, h, k}, 14), random_f64({h, k}, 15), random_f64({5, h, k}, 16), random_f64({h, k}, 17),
          random_f64({d, h, v}, 18), random_f64({h, v}, 19), random_f64({h, v, o}, 20), random_f64({o}, 21)};
}

AttentionWeights weights_of(const std::vector<Tensor>& in) {
  return {in[3], in[4], in[5], in[6], in[7], in[8], in[9], in[10]};
}

TEST(MultiHeadAttentionTest, GradientsMatchFiniteDifferences) {
  for (bool causal : {false, true}) {
    auto f = [causal](const std::vector<Tensor>& in) {
      return multi_head_attention(in[0], in[1], in[2], weights_of(in), causal);
    };
    // Self-attention shapes (T = S) so the causal mask is square, as in a decoder.
    EXPECT_TRUE(check_gradients(f, attention_inputs(/*separate_key=*/false), {.rtol = 1e-5, .atol = 1e-7}))
        << "causal=" << causal;
  }
  auto cross = [](const std::vector<Tensor>& in) { return multi_head_attention(in[0], in[1], in[2], weights_of(in), false); };
  EXPECT_TRUE(check_gradients(cross, attention_inputs(/*separate_key=*/true), {.rtol = 1e-5, .atol = 1e-7}));
}

TEST(MultiHeadAttentionTest, CausalOutputAtTIgnoresLaterPositions) {
  MultiHeadAttention mha(2, 4);
  HostTensor x = random_f64({1, 6, 8}, 30).astype(DType::kF32);
  HostTensor changed = x.clone();
  for (int64_t i = 3 * 8; i < 6 * 8; ++i) changed.data<float>()[static_cast<size_t>(i)] += 1.0f;  // positions 3..5
  const std::vector<float> a = mha(Tensor(x), Tensor(x), {.use_causal_mask = true}).to_vector<float>();
  const std::vector<float> b = mha(Tensor(changed), Tensor(changed), {.use_causal_mask = true}).to_vector<float>();
  for (size_t i = 0; i < 3 * 8; ++i) EXPECT_EQ(a[i], b[i]) << "position " << i / 8 << " saw the future";
  double moved = 0;
  for (size_t i = 3 * 8; i < a.size(); ++i) moved += std::abs(a[i] - b[i]);
  EXPECT_GT(moved, 1e-3);
  // Without the mask, position 0 does see the change.
  const std::vector<float> c = mha(Tensor(x), Tensor(x)).to_vector<float>();
  const std::vector<float> d = mha(Tensor(changed), Tensor(changed)).to_vector<float>();
  EXPECT_NE(c[0], d[0]);
}

TEST(MultiHeadAttentionTest, ConfigRoundTripsAndBadArgumentsAreErrors) {
  MultiHeadAttention mha(2, 16, {.dropout = 0.1, .use_bias = false, .name = "attn"});
  const std::string config = mha.get_config();
  MultiHeadAttention copy = MultiHeadAttention::from_config(config);
  EXPECT_EQ(copy.get_config(), config);
  KILN_EXPECT_ERROR(MultiHeadAttention(0, 4), ValueError, "num_heads > 0");
  KILN_EXPECT_ERROR(MultiHeadAttention(2, 4, {.dropout = 1.0}), ValueError, "dropout in [0, 1)");
  Tensor flat = Tensor(HostTensor(Shape(DType::kF32, {2, 4})));
  KILN_EXPECT_ERROR(mha(flat, flat), ShapeError, "[attn] expected inputs of shape (batch, sequence, features)");
  KILN_EXPECT_ERROR(mha(flat), ValueError, "MultiHeadAttention expects query");
}

}  // namespace
}  // namespace kiln::keras
