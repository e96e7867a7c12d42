// Layers: naming, build from the input shape, errors that name the layer, config JSON round
// trips, initializers and Dropout's training/inference behaviour.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

Tensor zeros_f32(Dims dims) { return Tensor(HostTensor(Shape(DType::kF32, std::move(dims)))); }

TEST(LayerNamingTest, SequentialNamesLayersLikeKeras) {
  Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dense(10),
                    Dense(10, {.name = "logits"}), Flatten()});
  std::vector<std::string> names;
  for (const LayerHandle& l : model.layers()) names.push_back(l->name());
  EXPECT_EQ(names, (std::vector<std::string>{"flatten", "dense", "dense_1", "logits", "flatten_1"}));
  EXPECT_EQ(model.get_layer("dense_1").weights()[0].name(), "dense_1/kernel");
}

TEST(LayerNamingTest, EachModelHasItsOwnNameScope) {
  Sequential a({Dense(2, {.input_shape = {3}})});
  Sequential b({Dense(2, {.input_shape = {3}})});
  EXPECT_EQ(a.layers()[0]->name(), "dense");
  EXPECT_EQ(b.layers()[0]->name(), "dense");
}

TEST(DenseTest, BuildsKernelAndBiasFromTheInputShape) {
  Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128), Dense(10)});
  const Layer& dense = model.get_layer("dense");
  ASSERT_EQ(dense.weights().size(), 2u);
  EXPECT_EQ(dense.weights()[0].shape(), Shape(DType::kF32, {784, 128}));
  EXPECT_EQ(dense.weights()[1].shape(), Shape(DType::kF32, {128}));
  EXPECT_EQ(model.count_params(), 101770);
}

TEST(DenseTest, RejectsInputWithWrongLastDim) {
  Dense dense(10);
  dense.set_name("dense");
  dense.build({784});
  KILN_EXPECT_ERROR(dense(zeros_f32({32, 28, 28})), ShapeError,
                    "[dense] expected input with last dimension 784, received f32[32,28,28]. "
                    "Hint: add Flatten() before Dense.");
  KILN_EXPECT_ERROR(dense(zeros_f32({32, 100})), ShapeError, "Hint: check the previous layer's output shape");
}

TEST(DenseTest, ComputesMatmulPlusBiasThenActivation) {
  Dense dense(2, {.activation = "relu", .kernel_initializer = "ones", .bias_initializer = "ones"});
  Tensor y = dense(Tensor::from_vector<float>({1, 3}, {1, -2, -3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0}));  // relu(1 - 2 - 3 + 1)
  Tensor z = dense(Tensor::from_vector<float>({1, 3}, {1, 2, 3}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{7, 7}));
}

TEST(DenseTest, UnknownActivationIsAConfigError) {
  KILN_EXPECT_ERROR(Dense(2, {.activation = "relux"}), ConfigError, "unknown activation 'relux'");
}

TEST(LayerConfigTest, DenseConfigIsKerasJsonAndRoundTrips) {
  Dense dense(128, {.activation = "relu", .kernel_initializer = Initializer("he_normal", 3)});
  dense.set_name("dense_1");
  const std::string config = dense.get_config();
  for (const char* part : {"\"units\":128", "\"activation\":\"relu\"", "\"use_bias\":true", "\"name\":\"dense_1\"",
                           "\"class_name\":\"HeNormal\"", "\"seed\":3", "\"class_name\":\"Zeros\""})
    EXPECT_NE(config.find(part), std::string::npos) << part << " not in " << config;
  EXPECT_EQ(Dense::from_config(config).get_config(), config);
}

// A damaged config is an error, not a number rounded toward what it might have been.
TEST(LayerConfigTest, NonIntegerSizesAreConfigErrorsNamingTheField) {
  KILN_EXPECT_ERROR(Dense::from_config(R"({"name": "d", "units": 3.7})"), ConfigError,
                    "[Dense] config field 'units' must be an integer, received 3.7");
  KILN_EXPECT_ERROR(Dense::from_config(R"({"name": "d", "units": "3"})"), ConfigError, "'units' must be an integer");
  KILN_EXPECT_ERROR(Conv2D::from_config(R"({"name": "c", "filters": 2.5, "kernel_size": [3, 3]})"), ConfigError,
                    "[Conv2D] config field 'filters' must be an integer, received 2.5");
  KILN_EXPECT_ERROR(Dense::from_config(R"({"name": "d", "units": 3, "batch_input_shape": [null, 7.5]})"), ConfigError,
                    "[d] batch_input_shape [null,7.5] must hold positive integers");
}

TEST(LayerConfigTest, DuplicateLayerNamesAreRejectedAsKerasDoes) {
  KILN_EXPECT_ERROR(Sequential({Dense(2, {.input_shape = {3}, .name = "d"}), Dense(3, {.name = "d"})}), ValueError,
                    "Name 'd' is already the name of a layer in this model");
  const std::string json = Sequential({Dense(2, {.input_shape = {3}, .name = "d"}), Dense(3, {.name = "e"})}).to_json();
  std::string twice = json;
  const size_t at = twice.find("\"e\"");  // the second layer's name, the only "e" in the config
  ASSERT_NE(at, std::string::npos) << json;
  twice.replace(at, 3, "\"d\"");
  KILN_EXPECT_ERROR(Sequential::from_json(twice), ValueError, "Name 'd' is already the name");
}

TEST(LayerConfigTest, SequentialJsonRoundTripsAndRebuilds) {
  Sequential model({Flatten({.input_shape = {28, 28}}), Dense(128, {.activation = "relu"}), Dropout(0.2),
                    Reshape({2, 64}), Activation("tanh"), Flatten(), Dense(10)});
  const std::string json = model.to_json();
  EXPECT_NE(json.find("\"batch_input_shape\":[null,28,28]"), std::string::npos) << json;
  std::unique_ptr<Sequential> copy = Sequential::from_json(json);
  EXPECT_EQ(copy->to_json(), json);
  EXPECT_EQ(copy->count_params(), model.count_params());
  KILN_EXPECT_ERROR(layer_from_config("Conv9D", "{}"), ConfigError, "unknown layer class 'Conv9D'");
}

TEST(ReshapeTest, InfersTheMinusOneDimAndRejectsMismatches) {
  Reshape r({-1, 4});
  EXPECT_EQ(r(zeros_f32({2, 8})).dims(), (Dims{2, 2, 4}));
  Reshape bad({3, 3});
  KILN_EXPECT_ERROR(bad(zeros_f32({2, 8})), ShapeError, "[reshape] cannot reshape");
}

TEST(DropoutTest, IsIdentityInInferenceAndScalesKeptValuesInTraining) {
  Dropout drop(0.5, {.seed = 7});
  Tensor x = Tensor(HostTensor::from_vector<float>({1, 1000}, std::vector<float>(1000, 1.0f)));
  EXPECT_EQ(drop(x, /*training=*/false).to_vector<float>(), x.to_vector<float>());
  std::vector<float> a = drop(x, /*training=*/true).to_vector<float>();
  int kept = 0;
  for (float v : a) {
    EXPECT_TRUE(v == 0.0f || v == 2.0f);
    kept += v != 0.0f;
  }
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
  EXPECT_NE(drop(x, /*training=*/true).to_vector<float>(), a);  // the step counter advanced
  Dropout same(0.5, {.seed = 7});
  EXPECT_EQ(same(x, /*training=*/true).to_vector<float>(), a);  // reproducible from the seed
}

// noise_shape (None, 1, 1, 1): one draw per example, shared by all its elements (EfficientNet's
// drop-connect); the config writes and reads it as Keras does.
TEST(DropoutTest, NoiseShapeSharesTheMaskAlongItsOnes) {
  Dropout drop(0.5, {.noise_shape = Dims{kNoneDim, 1, 1, 1}, .seed = 3, .name = "drop"});
  const Tensor x = Tensor(HostTensor::from_vector<float>({64, 2, 2, 3}, std::vector<float>(64 * 12, 1.0f)));
  EXPECT_EQ(drop(x, /*training=*/false).to_vector<float>(), x.to_vector<float>());
  const std::vector<float> y = drop(x, /*training=*/true).to_vector<float>();
  int kept = 0;
  for (size_t n = 0; n < 64; ++n) {
    for (size_t i = 0; i < 12; ++i) EXPECT_EQ(y[n * 12 + i], y[n * 12]) << "example " << n;
    EXPECT_TRUE(y[n * 12] == 0.0f || y[n * 12] == 2.0f);
    kept += y[n * 12] != 0.0f;
  }
  EXPECT_GT(kept, 16);
  EXPECT_LT(kept, 48);
  EXPECT_EQ(drop.get_config(), R"({"dtype":"float32","name":"drop","noise_shape":[null,1,1,1],"rate":0.5,"seed":3,)"
                               R"("trainable":true})");
  EXPECT_EQ(layer_from_config("Dropout", drop.get_config())->get_config(), drop.get_config());
  Dropout channels(0.5, {.noise_shape = Dims{kNoneDim, 1, 1, 3}, .seed = 3});
  const std::vector<float> c = channels(x, /*training=*/true).to_vector<float>();
  for (size_t i = 3; i < 12; ++i) EXPECT_EQ(c[i], c[i % 3]);  // one value per channel of example 0
  Dropout bad(0.5, {.noise_shape = Dims{kNoneDim, 3, 1, 1}, .name = "bad"});
  KILN_EXPECT_ERROR(bad(x, /*training=*/true), ShapeError, "does not broadcast");
  KILN_EXPECT_ERROR(layer_from_config("Dropout", R"({"rate": 0.5, "noise_shape": [null, 0]})"), ConfigError,
                    "noise_shape entries");
}

TEST(InitializersTest, GlorotUniformStaysWithinTheKerasLimit) {
  HostTensor k = Initializer("glorot_uniform")(Shape(DType::kF32, {784, 128}), "dense/kernel");
  const double limit = std::sqrt(6.0 / (784 + 128));
  double sum = 0;
  for (float v : k.data<float>()) {
    EXPECT_LE(std::fabs(v), limit);
    sum += v;
  }
  EXPECT_NEAR(sum / static_cast<double>(k.num_elements()), 0.0, 0.01);
}

TEST(InitializersTest, SeedsMakeValuesReproducibleAndHeNormalHasItsStddev) {
  Initializer he("he_normal", /*seed=*/1);
  HostTensor a = he(Shape(DType::kF32, {256, 256}), "a"), b = he(Shape(DType::kF32, {256, 256}), "b");
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  double sq = 0;
  for (float v : a.data<float>()) sq += double(v) * v;
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(a.num_elements())), std::sqrt(2.0 / 256), 0.005);
  EXPECT_EQ(Initializer("ones")(Shape(DType::kF32, {3}), "x").to_vector<float>(), (std::vector<float>{1, 1, 1}));
  KILN_EXPECT_ERROR(Initializer("glorot")(Shape(DType::kF32, {3}), "x"), ConfigError, "unknown initializer");
}

TEST(ActivationsTest, GeluAndSigmoidMatchTheirFormulas) {
  Tensor x = Tensor::from_vector<float>({3}, {-1, 0, 1});
  std::vector<float> g = activations::gelu(x).to_vector<float>();
  EXPECT_NEAR(g[0], -0.15865525, 1e-6);
  EXPECT_NEAR(g[2], 0.84134475, 1e-6);
  EXPECT_NEAR(activations::sigmoid(x).to_vector<float>()[2], 0.73105858, 1e-6);
  EXPECT_NEAR(activations::softmax(Tensor::from_vector<float>({1, 2}, {0, 0})).to_vector<float>()[0], 0.5, 1e-7);
}

}  // namespace
}  // namespace kiln::keras
