// Dtype policies: the names and their dtypes, the global policy, what a policy does to each
// kind of layer (converts in the traced IR, output dtypes, f32 variables and statistics), a
// bf16 Dense against values computed here, and the policy in .h5 / .keras configs in the forms
// tf.keras 2.x and Keras 3 write.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "kiln/core/half.h"
#include "kiln/keras/keras.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/keras/saving/saving.h"
#include "kiln/trace/function.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras::mixed_precision {
namespace {

// Every test leaves the global policy as it found it (float32).
class PolicyTest : public ::testing::Test {
 protected:
  void TearDown() override { set_global_policy("float32"); }
};

// The IR of `fn` traced on one f32 input of `dims`.
std::string traced_ir(const std::function<Tensor(const Tensor&)>& fn, const Dims& dims) {
  Function f("probe", [fn](const std::vector<Tensor>& in) { return fn(in[0]); });
  f.compile({Shape(DType::kF32, dims)});
  return f.last_ir();
}

float bf16_round(float v) { return bf16_bits_to_f32(f32_to_bf16_bits(v)); }

TEST_F(PolicyTest, NamesGiveKerasComputeAndVariableDtypes) {
  EXPECT_EQ(Policy("mixed_bfloat16").compute_dtype(), DType::kBF16);
  EXPECT_EQ(Policy("mixed_bfloat16").variable_dtype(), DType::kF32);
  EXPECT_EQ(Policy("mixed_float16").compute_dtype(), DType::kF16);
  EXPECT_EQ(Policy("mixed_float16").variable_dtype(), DType::kF32);
  EXPECT_EQ(Policy("bfloat16").variable_dtype(), DType::kBF16);
  EXPECT_EQ(Policy("float16").compute_dtype(), DType::kF16);
  EXPECT_EQ(Policy("float64").compute_dtype(), DType::kF64);
  EXPECT_EQ(Policy().name(), "float32");
  EXPECT_TRUE(Policy("mixed_bfloat16").is_mixed());
  EXPECT_FALSE(Policy("bfloat16").is_mixed());
}

TEST_F(PolicyTest, UnknownNameIsAValueErrorListingTheKnownOnes) {
  KILN_EXPECT_ERROR(Policy("mixed_bf16"), ValueError, "cannot convert 'mixed_bf16'");
  KILN_EXPECT_ERROR(Policy("int32"), ValueError, "'mixed_float16', 'mixed_bfloat16', 'float32', 'float64'");
  KILN_EXPECT_ERROR(layers::Dense(4, {.dtype = "half"}), ValueError, "Valid policies are");
}

TEST_F(PolicyTest, LayersTakeTheGlobalPolicyWhenTheyAreMade) {
  layers::Dense before(4);
  set_global_policy("mixed_bfloat16");
  EXPECT_EQ(global_policy().name(), "mixed_bfloat16");
  layers::Dense after(4), pinned(4, {.dtype = "float32"});
  EXPECT_EQ(before.dtype_policy().name(), "float32");
  EXPECT_EQ(after.dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(after.compute_dtype(), DType::kBF16);
  EXPECT_EQ(after.variable_dtype(), DType::kF32);
  EXPECT_EQ(pinned.compute_dtype(), DType::kF32);
}

TEST_F(PolicyTest, MixedDenseCastsInputAndKernelAndKeepsTheKernelF32) {
  layers::Dense dense(3, {.dtype = "mixed_bfloat16"});
  const std::string ir = traced_ir([&](const Tensor& x) { return dense(x); }, {2, 4});
  EXPECT_EQ(dense.kernel().dtype(), DType::kF32);
  EXPECT_EQ(dense.bias().dtype(), DType::kF32);
  // the input, the kernel and the bias each become bf16 before the matmul and the add
  EXPECT_NE(ir.find("bf16[2,4] convert("), std::string::npos) << ir;
  EXPECT_NE(ir.find("bf16[4,3] convert("), std::string::npos) << ir;
  EXPECT_NE(ir.find("bf16[3] convert("), std::string::npos) << ir;
  Tensor y = dense(Tensor::from_vector<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(y.dtype(), DType::kBF16);
}

TEST_F(PolicyTest, Bf16DenseMatchesBf16RoundedInputsWithF32Accumulation) {
  // y = bf16(sum_k bf16(x_ik) bf16(w_kj) + bf16(b_j)): products of bf16 values are exact in f32,
  // so the f32 sum here and the kernel's differ by the order of additions only.
  layers::Dense dense(2, {.bias_initializer = "ones", .dtype = "mixed_bfloat16"});
  const std::vector<float> xs = {0.1f, -1.3f, 2.71828f, 0.333f, 1.1f, 0.77f, -0.25f, 3.14159f};
  Tensor y = dense(Tensor::from_vector<float>({2, 4}, xs));
  const std::vector<float> w = dense.kernel().storage().to_vector<float>();
  const std::vector<float> got = y.to_vector<float>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      float acc = 0;
      for (int k = 0; k < 4; ++k) acc += bf16_round(xs[size_t(i * 4 + k)]) * bf16_round(w[size_t(k * 2 + j)]);
      const float want = bf16_round(bf16_round(acc) + 1.0f);
      EXPECT_NEAR(got[size_t(i * 2 + j)], want, std::fabs(want) * 1e-2f + 1e-6f) << i << "," << j;
    }
}

// Every layer class under mixed_bfloat16: a bf16 output, f32 weights, and f32 gradients for
// them (the convert's VJP), from one traced train-like step.
TEST_F(PolicyTest, EveryLayerOutputsBf16AndKeepsF32WeightsAndGradients) {
  struct Case {
    const char* what;
    LayerHandle layer;
    std::vector<Dims> inputs;
  };
  const Policy mixed("mixed_bfloat16");
  std::vector<Case> cases;
  cases.push_back({"Dense", layers::Dense(3, {.dtype = mixed}), {{2, 4}}});
  cases.push_back({"Conv2D", layers::Conv2D(2, 3, {.dtype = mixed}), {{1, 5, 5, 2}}});
  cases.push_back({"MaxPooling2D", layers::MaxPooling2D({.dtype = mixed}), {{1, 4, 4, 2}}});
  cases.push_back({"AveragePooling2D", layers::AveragePooling2D({.dtype = mixed}), {{1, 4, 4, 2}}});
  cases.push_back({"GlobalAveragePooling2D", layers::GlobalAveragePooling2D({.dtype = mixed}), {{1, 4, 4, 2}}});
  cases.push_back({"Flatten", layers::Flatten({.dtype = mixed}), {{2, 2, 3}}});
  cases.push_back({"Reshape", layers::Reshape({6}, {.dtype = mixed}), {{2, 2, 3}}});
  cases.push_back({"Dropout", layers::Dropout(0.5, {.dtype = mixed}), {{2, 4}}});
  cases.push_back({"Activation", layers::Activation("gelu", {.dtype = mixed}), {{2, 4}}});
  cases.push_back({"BatchNormalization", layers::BatchNormalization({.dtype = mixed}), {{4, 3}}});
  cases.push_back({"LayerNormalization", layers::LayerNormalization({.dtype = mixed}), {{2, 3}}});
  cases.push_back({"MultiHeadAttention", layers::MultiHeadAttention(2, 4, {.dtype = mixed}), {{1, 3, 4}, {1, 3, 4}}});
  cases.push_back({"Add", layers::Add({.dtype = mixed}), {{2, 3}, {2, 3}}});
  cases.push_back({"Concatenate", layers::Concatenate({.dtype = mixed}), {{2, 3}, {2, 2}}});
  for (Case& c : cases) {
    std::vector<Shape> signature;
    for (const Dims& d : c.inputs) signature.emplace_back(DType::kF32, d);
    DType out_dtype = DType::kF32;
    std::vector<DType> grad_dtypes;
    Function f(c.what, [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
      GradientTape tape;
      Tensor y = in.size() == 1 ? (*c.layer)(in[0], /*training=*/true) : (*c.layer)(in, /*training=*/true);
      out_dtype = y.dtype();
      Tensor loss = reduce_sum(cast(y, DType::kF32) * cast(y, DType::kF32));
      std::vector<Tensor> grads = tape.gradient(loss, c.layer->trainable_weights());
      for (const Tensor& g : grads) grad_dtypes.push_back(g.dtype());
      return {loss};
    });
    f.compile(signature);
    EXPECT_EQ(out_dtype, DType::kBF16) << c.what;
    EXPECT_EQ(c.layer->compute_dtype(), DType::kBF16) << c.what;
    for (const Variable& w : c.layer->weights()) EXPECT_EQ(w.dtype(), DType::kF32) << c.what << " " << w.name();
    for (DType g : grad_dtypes) EXPECT_EQ(g, DType::kF32) << c.what;
  }
}

TEST_F(PolicyTest, IntegerInputsAreNotCast) {
  layers::Embedding emb(10, 4, {.dtype = "mixed_bfloat16"});
  Tensor y = emb(Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(y.dtype(), DType::kBF16);
  EXPECT_EQ(emb.weights()[0].dtype(), DType::kF32);
  const std::vector<float> table = emb.weights()[0].storage().to_vector<float>();
  EXPECT_EQ(y.to_vector<float>()[0], bf16_round(table[4]));  // row 1, column 0
}

TEST_F(PolicyTest, EmbeddingRejectsA16BitTable) {
  layers::Embedding emb(10, 4, {.dtype = "bfloat16"});
  KILN_EXPECT_ERROR(emb(Tensor::from_vector<int32_t>({1, 1}, {1})), ValueError, "use 'mixed_bfloat16'");
}

TEST_F(PolicyTest, BatchNormalizationKeepsStatisticsInF32) {
  layers::BatchNormalization bn({.dtype = "mixed_bfloat16"});
  const std::string ir = traced_ir([&](const Tensor& x) { return bn(x, /*training=*/true); }, {4, 2});
  for (const Variable& v : bn.weights()) EXPECT_EQ(v.dtype(), DType::kF32) << v.name();
  // x (4, 2): feature 0 = {1, 2, 3, 4}: mean 2.5 enters the moving mean as 0.01 * 2.5, a
  // value bf16 would round to 0.02490234375.
  Tensor y = bn(Tensor::from_vector<float>({4, 2}, {1, 2, 2, 4, 3, 6, 4, 8}), /*training=*/true);
  EXPECT_EQ(y.dtype(), DType::kBF16);
  EXPECT_NEAR(bn.moving_mean().storage().to_vector<float>()[0], 0.025, 1e-7);
  // the mean and variance reductions run on f32 (the input converts once, the output once)
  EXPECT_NE(ir.find("f32[4,2] convert("), std::string::npos) << ir;
  EXPECT_NE(ir.find("bf16[4,2] convert("), std::string::npos) << ir;
}

TEST_F(PolicyTest, LayerNormalizationNormalizesInF32AndOutputsTheComputeDtype) {
  layers::LayerNormalization ln({.dtype = "mixed_bfloat16"});
  // x = {1000, 1004, 1008, 1012} is exact in bf16, but its sum 4024 is not (bf16 spacing there
  // is 16): a bf16 mean would be 1008 and the outputs (-8, -4, 0, 4) / sqrt(24). In f32 the
  // mean is 1006 and the outputs (-6, -2, 2, 6) / sqrt(20), rounded to bf16.
  Tensor y = ln(Tensor::from_vector<float>({1, 4}, {1000, 1004, 1008, 1012}));
  EXPECT_EQ(y.dtype(), DType::kBF16);
  const std::vector<float> got = y.to_vector<float>();
  const double s = std::sqrt(20 + 1e-3);
  const double want[] = {-6 / s, -2 / s, 2 / s, 6 / s};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 8e-3) << i;
  EXPECT_EQ(ln.weights()[0].dtype(), DType::kF32);
}

TEST_F(PolicyTest, SoftmaxNormalizesInF32AndAFloat32LayerCastsBack) {
  layers::Dense logits(3, {.dtype = "mixed_bfloat16"});
  layers::Activation softmax("softmax", {.dtype = "float32"});
  Tensor y = softmax(logits(Tensor::from_vector<float>({1, 2}, {0.5f, -0.5f})));
  EXPECT_EQ(y.dtype(), DType::kF32);
  layers::Activation bf16_softmax("softmax", {.dtype = "mixed_bfloat16"});
  Tensor p = bf16_softmax(Tensor::from_vector<float>({1, 3}, {1, 2, 3}));
  EXPECT_EQ(p.dtype(), DType::kBF16);
  const std::string ir = traced_ir([&](const Tensor& x) { return bf16_softmax(x); }, {1, 3});
  EXPECT_NE(ir.find("f32[1,3] exp("), std::string::npos) << ir;
  EXPECT_EQ(ir.find("bf16[1,3] exp("), std::string::npos) << ir;
}

TEST_F(PolicyTest, LossesAndMetricsAreComputedInF32) {
  losses::SparseCategoricalCrossentropy loss({.from_logits = true});
  Tensor y_pred = cast(Tensor::from_vector<float>({1, 3}, {1, 2, 3}), DType::kBF16);
  Tensor l = loss(Tensor::from_vector<int32_t>({1}, {2}), y_pred);
  EXPECT_EQ(l.dtype(), DType::kF32);
  EXPECT_NEAR(l.to_vector<float>()[0], std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0, 1e-6);
}

TEST_F(PolicyTest, PolicyCannotChangeAfterBuild) {
  layers::Dense dense(2);
  dense(Tensor::from_vector<float>({1, 2}, {1, 2}));
  KILN_EXPECT_ERROR(dense.set_dtype_policy("mixed_bfloat16"), ValueError, "cannot change the dtype policy");
}

TEST_F(PolicyTest, ConfigsWriteKeras2FormsAndReadEveryKerasForm) {
  layers::Dense mixed(2, {.dtype = "mixed_bfloat16"}), plain(2, {.dtype = "bfloat16"});
  EXPECT_NE(mixed.get_config().find(R"("dtype":{"class_name":"Policy","config":{"name":"mixed_bfloat16"}})"),
            std::string::npos) << mixed.get_config();
  EXPECT_NE(plain.get_config().find(R"("dtype":"bfloat16")"), std::string::npos) << plain.get_config();
  const char* forms[] = {
      R"({"name": "d", "units": 2, "dtype": "mixed_float16"})",
      R"({"name": "d", "units": 2, "dtype": {"class_name": "Policy", "config": {"name": "mixed_float16"}}})",
      R"({"name": "d", "units": 2, "dtype": {"module": "keras", "class_name": "DTypePolicy",
          "config": {"name": "mixed_float16"}, "registered_name": null}})",
      R"({"name": "d", "units": 2, "dtype": {"module": "keras", "class_name": "FloatDTypePolicy",
          "config": {"name": "mixed_float16"}, "registered_name": null}})",
  };
  for (const char* form : forms) EXPECT_EQ(layer_from_config("Dense", form)->dtype_policy().name(), "mixed_float16") << form;
  KILN_EXPECT_ERROR(layer_from_config("Dense", R"({"units": 2, "name": "d", "dtype": "mixed_half"})"), ConfigError,
                    "[d] dtype");
  KILN_EXPECT_ERROR(layer_from_config("Dense", R"({"units": 2, "name": "d", "dtype": {"class_name":
      "QuantizedDTypePolicy", "config": {"name": "int8_from_float32"}}})"), ConfigError, "QuantizedDTypePolicy");
}

TEST_F(PolicyTest, ReadsAKeras2ModelJsonWithMixedPolicies) {
  // What tf.keras 2.15's model.to_json() writes after set_global_policy('mixed_bfloat16') with
  // Keras's final float32 softmax.
  std::unique_ptr<Model> model = model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 3], "dtype": "float32", "name": "in"}},
      {"class_name": "Dense", "config": {"name": "d", "trainable": true, "units": 2, "activation": "linear",
       "dtype": {"class_name": "Policy", "config": {"name": "mixed_bfloat16"}}}},
      {"class_name": "Activation", "config": {"name": "a", "trainable": true, "activation": "softmax",
       "dtype": "float32"}}]}, "keras_version": "2.15.0", "backend": "tensorflow"})");
  EXPECT_EQ(model->get_layer("d").dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(model->get_layer("a").dtype_policy().name(), "float32");
  HostTensor p = model->predict(HostTensor::from_vector<float>({1, 3}, {1, 2, 3}));
  EXPECT_EQ(p.dtype(), DType::kF32);
  EXPECT_NEAR(p.to_vector<float>()[0] + p.to_vector<float>()[1], 1.0, 1e-6);
}

TEST_F(PolicyTest, PoliciesRoundTripThroughH5AndKerasFiles) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kiln_policy_test";
  std::filesystem::create_directories(dir);
  for (const char* file : {"m.h5", "m.keras"}) {
    models::Sequential model({layers::Dense(4, {.activation = "relu", .input_shape = {3}, .dtype = "mixed_bfloat16"}),
                              layers::Dense(2, {.dtype = "float32"})});
    model.predict(HostTensor::from_vector<float>({1, 3}, {1, 2, 3}));
    const std::string path = (dir / file).string();
    model.save(path, {.include_optimizer = false});
    std::unique_ptr<Model> loaded = load_model(path);
    EXPECT_EQ(loaded->layers()[0]->dtype_policy().name(), "mixed_bfloat16") << file;
    EXPECT_EQ(loaded->layers()[1]->dtype_policy().name(), "float32") << file;
    EXPECT_EQ(loaded->layers()[0]->weights()[0].dtype(), DType::kF32) << file;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::keras::mixed_precision
