// Every layer of the catalogue through the layer harness (issue 34 item 6): one case a layer
// class (two for GRU's reset_after), and a check that no class layer_from_config builds is
// missing. The layers' own tests keep their hand-computed values; what every layer owes (config,
// shapes, saving, modes, mixed precision, gradients) is here, once.
#include <gtest/gtest.h>

#include <set>

#include "kiln/keras/keras.h"
#include "tests/testing/finite_difference.h"
#include "tests/keras/layers/layer_harness.h"

namespace kiln::keras {
namespace {

using testing::LayerCase;
using testing::TrainingMode;

struct NamedCase {
  std::string name;
  LayerCase c;
};

template <class F>
std::function<LayerHandle()> maker(F f) {
  return [f] { return LayerHandle(f()); };
}

/// A layer that is random in training and the identity at inference (Dropout, noise, the
/// random augmentations).
LayerCase random_at_training(std::function<LayerHandle()> make, Dims input) {
  return {.make = std::move(make), .inputs = {std::move(input)}, .training = TrainingMode::kRandom, .identity_at_inference = true};
}

const char* const kIntegerInput = "integer inputs and no weights: nothing is differentiable";
const char* const kIntegerOutput = "integer outputs (bucket ids) have no gradient";
const char* const kHostText =
    "a vocabulary lookup on the host (strings have no IR dtype): it runs in the input pipeline or as a model's "
    "first layers (tests/keras/layers/text_preprocessing_test.cpp, tests/keras/models/text_model_test.cpp)";

std::vector<NamedCase> catalogue() {
  const Dims vec = {3, 4}, seq = {2, 5, 3}, image = {2, 4, 4, 3};
  const std::vector<Dims> two_vecs = {{3, 4}, {3, 4}};
  return {
      // Core
      {"Dense", {.make = maker([] { return Dense(3, {.activation = "tanh", .name = "d"}); }),
                 .inputs = {vec},
                 .h5_weight_names = {"d/kernel:0", "d/bias:0"}}},
      {"Activation", {.make = maker([] { return Activation("tanh"); }), .inputs = {vec}}},
      {"Flatten", {.make = maker([] { return Flatten(); }), .inputs = {image}}},
      {"Reshape", {.make = maker([] { return Reshape({2, 2}); }), .inputs = {vec}}},
      {"Permute", {.make = maker([] { return Permute({2, 1}); }), .inputs = {seq}}},
      {"RepeatVector", {.make = maker([] { return RepeatVector(3); }), .inputs = {vec}}},
      {"Embedding", {.make = maker([] { return Embedding(6, 3); }),
                     .inputs = {{3, 4}},
                     .input_dtype = DType::kI32,
                     .int_high = 6}},
      {"Masking", {.make = maker([] { return Masking(); }), .inputs = {seq}}},
      // Regularization
      {"Dropout", random_at_training(maker([] { return Dropout(0.5, {.seed = 1}); }), {4, 6})},
      {"Dropout_noise_shape",
       random_at_training(maker([] { return Dropout(0.5, {.noise_shape = Dims{kNoneDim, 1, 1, 1}, .seed = 1}); }),
                          {4, 3, 3, 2})},
      {"SpatialDropout2D", random_at_training(maker([] { return SpatialDropout2D(0.5, {.seed = 1}); }), {2, 3, 3, 6})},
      {"GaussianNoise", random_at_training(maker([] { return GaussianNoise(0.1, {.seed = 1}); }), vec)},
      // Normalization
      {"BatchNormalization", {.make = maker([] { return BatchNormalization(); }),
                              .inputs = {{4, 3}},
                              .training = TrainingMode::kDiffers}},
      {"LayerNormalization", {.make = maker([] { return LayerNormalization(); }), .inputs = {vec}}},
      // Activations
      {"ReLU", {.make = maker([] { return ReLU(); }), .inputs = {vec}}},
      {"LeakyReLU", {.make = maker([] { return LeakyReLU(0.3); }), .inputs = {vec}}},
      {"PReLU", {.make = maker([] { return PReLU({.alpha_initializer = Initializer("random_uniform", 1), .name = "p"}); }),
                 .inputs = {vec},
                 .h5_weight_names = {"p/alpha:0"}}},
      {"Softmax", {.make = maker([] { return Softmax(-1); }), .inputs = {vec}}},
      // Merging
      {"Add", {.make = maker([] { return Add(); }), .inputs = two_vecs}},
      {"Subtract", {.make = maker([] { return Subtract(); }), .inputs = two_vecs}},
      {"Multiply", {.make = maker([] { return Multiply(); }), .inputs = two_vecs}},
      {"Average", {.make = maker([] { return Average(); }), .inputs = two_vecs}},
      {"Maximum", {.make = maker([] { return Maximum(); }), .inputs = two_vecs}},
      {"Minimum", {.make = maker([] { return Minimum(); }), .inputs = two_vecs}},
      {"Concatenate", {.make = maker([] { return Concatenate(); }), .inputs = {{3, 4}, {3, 2}}}},
      {"Dot", {.make = maker([] { return Dot(1); }), .inputs = two_vecs}},
      {"MultiHeadAttention", {.make = maker([] { return MultiHeadAttention(2, 3); }),
                              .inputs = {{2, 4, 5}, {2, 3, 5}}}},
      // Convolution and pooling
      {"Conv1D", {.make = maker([] { return Conv1D(4, 3, {.padding = "causal", .name = "c"}); }),
                  .inputs = {{2, 6, 3}},
                  .h5_weight_names = {"c/kernel:0", "c/bias:0"}}},
      {"Conv2D", {.make = maker([] { return Conv2D(3, 2); }), .inputs = {image}}},
      {"Conv2DTranspose", {.make = maker([] {
                             return Conv2DTranspose(3, 3, {.strides = {2, 2}, .padding = "same", .output_padding = Dims{1, 1}, .name = "t"});
                           }),
                           .inputs = {{2, 3, 3, 2}},
                           .h5_weight_names = {"t/kernel:0", "t/bias:0"}}},
      {"DepthwiseConv2D", {.make = maker([] { return DepthwiseConv2D(3, {.depth_multiplier = 2, .name = "dw"}); }),
                           .inputs = {{2, 5, 5, 2}},
                           .h5_weight_names = {"dw/depthwise_kernel:0", "dw/bias:0"}}},
      {"SeparableConv2D", {.make = maker([] { return SeparableConv2D(3, 3, {.padding = "same", .name = "s"}); }),
                           .inputs = {{2, 5, 5, 2}},
                           .h5_weight_names = {"s/depthwise_kernel:0", "s/pointwise_kernel:0", "s/bias:0"}}},
      {"MaxPooling1D", {.make = maker([] { return MaxPooling1D(2); }), .inputs = {{2, 6, 3}}}},
      {"AveragePooling1D", {.make = maker([] { return AveragePooling1D(2); }), .inputs = {{2, 6, 3}}}},
      {"GlobalMaxPooling1D", {.make = maker([] { return GlobalMaxPooling1D(); }), .inputs = {seq}}},
      {"GlobalAveragePooling1D", {.make = maker([] { return GlobalAveragePooling1D(); }), .inputs = {seq}}},
      {"GlobalAveragePooling1D_channels_first",
       {.make = maker([] { return GlobalAveragePooling1D({.data_format = "channels_first", .keepdims = true}); }),
        .inputs = {seq}}},
      {"MaxPooling2D", {.make = maker([] { return MaxPooling2D(2); }), .inputs = {image}}},
      {"AveragePooling2D", {.make = maker([] { return AveragePooling2D(2); }), .inputs = {image}}},
      {"GlobalMaxPooling2D", {.make = maker([] { return GlobalMaxPooling2D(); }), .inputs = {image}}},
      {"GlobalAveragePooling2D", {.make = maker([] { return GlobalAveragePooling2D(); }), .inputs = {image}}},
      {"ZeroPadding2D", {.make = maker([] { return ZeroPadding2D(1); }), .inputs = {image}}},
      {"Cropping2D", {.make = maker([] { return Cropping2D(1); }), .inputs = {image}}},
      {"UpSampling2D", {.make = maker([] { return UpSampling2D(2, {.interpolation = "bilinear"}); }),
                        .inputs = {{2, 2, 3, 2}}}},
      // Recurrent
      {"SimpleRNN", {.make = maker([] { return SimpleRNN(3); }), .inputs = {seq}}},
      {"LSTM", {.make = maker([] { return LSTM(3, {.return_sequences = true}); }), .inputs = {seq}}},
      {"GRU", {.make = maker([] { return GRU(3); }), .inputs = {seq}}},
      {"GRU_reset_before", {.make = maker([] { return GRU(3, {.reset_after = false}); }), .inputs = {seq}}},
      {"Bidirectional", {.make = maker([] { return Bidirectional(LSTM(2), {.merge_mode = "sum"}); }),
                         .inputs = {seq}}},
      {"TimeDistributed", {.make = maker([] { return TimeDistributed(Dense(2)); }), .inputs = {seq}}},
      // Preprocessing
      {"Rescaling", {.make = maker([] { return Rescaling(1.0 / 255, -0.5); }),
                     .inputs = {image},
                     .float_low = 0,
                     .float_high = 255}},
      {"Rescaling_per_channel", {.make = maker([] { return Rescaling({0.5, 2.0, 4.0}, {1.0, 0.0, -1.0}); }),
                                 .inputs = {image}}},
      {"Normalization", {.make = maker([] {
                           // Adapted, so mean and variance are weights (given ones are constants, as in Keras).
                           Normalization n({.name = "n"});
                           n.adapt(kiln::testing::random_f64({16, 4}, 3, -5, 5).astype(DType::kF32));
                           return n;
                         }),
                         .inputs = {vec},
                         .h5_weight_names = {"n/mean:0", "n/variance:0", "n/count:0"}}},
      {"Resizing", {.make = maker([] { return Resizing(3, 5); }), .inputs = {image}}},
      {"CenterCrop", {.make = maker([] { return CenterCrop(2, 3); }), .inputs = {image}}},
      {"RandomCrop", {.make = maker([] { return RandomCrop(2, 3, {.seed = 1}); }),
                      .inputs = {image},
                      .training = TrainingMode::kRandom}},
      {"RandomFlip", random_at_training(maker([] { return RandomFlip({.seed = 3}); }), {4, 3, 3, 2})},
      {"RandomRotation", random_at_training(maker([] { return RandomRotation(0.2, {.seed = 1}); }), image)},
      {"RandomZoom", random_at_training(maker([] { return RandomZoom(0.3, std::nullopt, {.seed = 1}); }), image)},
      {"RandomTranslation", random_at_training(maker([] { return RandomTranslation(0.3, 0.3, {.seed = 1}); }), image)},
      {"RandomContrast", random_at_training(maker([] { return RandomContrast(0.5, {.seed = 1}); }), image)},
      {"RandomBrightness", random_at_training(maker([] { return RandomBrightness(0.3, {.seed = 1}); }), image)},
      {"Discretization", {.make = maker([] { return Discretization({.bin_boundaries = std::vector<double>{-0.5, 0, 0.5}}); }),
                          .inputs = {vec},
                          .no_gradients_because = kIntegerOutput}},
      {"CategoryEncoding", {.make = maker([] { return CategoryEncoding(5, {.output_mode = "count"}); }),
                            .inputs = {{3, 4}},
                            .input_dtype = DType::kI32,
                            .int_high = 5,
                            .no_gradients_because = kIntegerInput}},
      {"Hashing", {.make = maker([] { return Hashing(3); }),
                   .inputs = {{3, 4}},
                   .input_dtype = DType::kI32,
                   .int_high = 100,
                   .no_gradients_because = kIntegerInput,
                   .host_only_because = "FarmHash needs 64-bit bitwise ops Kiln's IR lacks: it hashes in the input pipeline"}},
      {"StringLookup", {.make = maker([] { return StringLookup({.vocabulary = {"a", "b", "c"}}); }),
                        .inputs = {{3, 4}},
                        .no_gradients_because = kIntegerOutput,
                        .host_only_because = kHostText}},
      {"IntegerLookup", {.make = maker([] { return IntegerLookup({.vocabulary = {5, 7, 9}}); }),
                         .inputs = {{3, 4}},
                         .input_dtype = DType::kI32,
                         .int_high = 10,
                         .no_gradients_because = kIntegerInput,
                         .host_only_because = kHostText}},
      {"TextVectorization",
       {.make = maker([] { return TextVectorization({.output_sequence_length = 4, .vocabulary = {"a", "b"}}); }),
        .inputs = {{3, 1}},
        .no_gradients_because = kIntegerOutput,
        .host_only_because = kHostText}},
  };
}

class LayerHarnessTest : public ::testing::TestWithParam<NamedCase> {};

TEST_P(LayerHarnessTest, PassesEveryCheck) { testing::layer_test(GetParam().c); }

INSTANTIATE_TEST_SUITE_P(Catalogue, LayerHarnessTest, ::testing::ValuesIn(catalogue()),
                         [](const ::testing::TestParamInfo<NamedCase>& param) { return param.param.name; });

// InputLayer declares a model's input and computes nothing: every saving check above goes
// through one, so it has no case of its own.
TEST(LayerHarnessCoverageTest, EveryClassLayerFromConfigBuildsHasACase) {
  std::set<std::string> covered{"InputLayer"};
  for (const NamedCase& n : catalogue()) covered.insert(n.c.make()->class_name());
  for (const std::string& name : registered_layer_classes()) EXPECT_TRUE(covered.count(name)) << name << " has no harness case";
}

}  // namespace
}  // namespace kiln::keras
