// Shared by the saving tests: the table of models (one per layer family Kiln has) and
// optimizers every format must round-trip, plus small deterministic training data.
// To cover a new layer, add a ModelCase below.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/keras/keras.h"

// The convolution layers are another engineer's work in progress; their cases join the table
// wherever their headers exist (TODO(#8): include them unconditionally once they land).
#if __has_include("kiln/keras/layers/conv2d.h") && __has_include("kiln/keras/layers/batch_normalization.h")
#include "kiln/keras/layers/batch_normalization.h"
#include "kiln/keras/layers/conv2d.h"
#include "kiln/keras/layers/global_average_pooling2d.h"
#include "kiln/keras/layers/pooling2d.h"
#define KILN_SAVING_TEST_CONV 1
#endif

namespace kiln::keras::testing {

struct ModelCase {
  std::string name;
  Dims input;  // per example
  std::function<std::vector<LayerHandle>()> layers;  // the model after its InputLayer; 3 logits out
  bool stochastic = false;  // training draws random numbers (Dropout): not in .h5 / directory files
};

inline std::vector<ModelCase> model_cases() {
  std::vector<ModelCase> cases = {
      {"SeedMlp", {4, 5}, [] { return std::vector<LayerHandle>{Flatten(), Dense(8, {.activation = "relu"}), Dense(3)}; }},
      {"DropoutActivationReshape", {6},
       [] {
         return std::vector<LayerHandle>{Dense(8), Activation("tanh"), Dropout(0.25), Reshape({2, 4}), Flatten(),
                                         Dense(3, {.use_bias = false})};
       },
       /*stochastic=*/true},
  };
#ifdef KILN_SAVING_TEST_CONV
  std::vector<ModelCase> conv = {
      {"Conv2DMaxPooling", {6, 6, 2},
       [] {
         return std::vector<LayerHandle>{Conv2D(4, 3, {.padding = "same", .activation = "relu"}), MaxPooling2D(),
                                         AveragePooling2D({.pool_size = {3, 3}}), Flatten(), Dense(3)};
       }},
      {"BatchNormalizationGlobalPooling", {5, 5, 2},
       [] {
         return std::vector<LayerHandle>{Conv2D(3, 2), BatchNormalization(), GlobalAveragePooling2D(), Dense(3)};
       }},
  };
  cases.insert(cases.end(), conv.begin(), conv.end());
#endif
  // Issue 20's catalogue: every layer with weights, and the shape layers around them.
  std::vector<ModelCase> catalogue = {
      {"ConvCatalogue", {6, 6, 2},
       [] {
         return std::vector<LayerHandle>{Conv2DTranspose(3, 2, {.strides = {2, 2}}), DepthwiseConv2D(3, {.depth_multiplier = 2}),
                                         SeparableConv2D(4, 3, {.strides = {2, 2}}), PReLU({.shared_axes = {1, 2}}),
                                         ZeroPadding2D(1), Cropping2D({{1, 0}, {0, 1}}), UpSampling2D(2),
                                         GlobalMaxPooling2D(), Dense(3)};
       }},
      {"SequenceCatalogue", {8, 3},
       [] {
         return std::vector<LayerHandle>{Conv1D(4, 3, {.padding = "causal"}), LeakyReLU(), MaxPooling1D(),
                                         AveragePooling1D(2, {.strides = 1, .padding = "same"}), Permute({2, 1}),
                                         GlobalMaxPooling1D(), RepeatVector(2), Flatten(), ReLU({.max_value = 6.0}),
                                         Dense(3), Softmax()};
       }},
  };
  cases.insert(cases.end(), catalogue.begin(), catalogue.end());
  return cases;
}

struct OptimizerCase {
  std::string name;
  std::function<OptimizerHandle()> make;
  bool keras3 = true;  // Keras 3 has this optimizer (else .keras refuses to save it)
};

inline std::vector<OptimizerCase> optimizer_cases() {
  return {
      {"Adam", [] { return OptimizerHandle(Adam({.learning_rate = 0.01})); }},
      {"AdamW", [] { return OptimizerHandle(AdamW({.learning_rate = 0.01, .weight_decay = 0.1})); }},
      {"SGD", [] { return OptimizerHandle(SGD({.learning_rate = 0.05})); }},
      {"SGDNesterov", [] { return OptimizerHandle(SGD({.learning_rate = 0.05, .momentum = 0.9, .nesterov = true})); }},
      {"RMSpropCenteredMomentum",
       [] { return OptimizerHandle(RMSprop({.learning_rate = 0.01, .momentum = 0.5, .centered = true})); }},
      {"Adadelta", [] { return OptimizerHandle(Adadelta({.learning_rate = 1.0})); }},
      {"Adagrad", [] { return OptimizerHandle(Adagrad({.learning_rate = 0.05})); }},
      {"Adamax", [] { return OptimizerHandle(Adamax({.learning_rate = 0.01})); }},
      // Nadam's u_product is optimizer state beside the slots.
      {"Nadam", [] { return OptimizerHandle(Nadam({.learning_rate = 0.01})); }},
      {"Ftrl", [] { return OptimizerHandle(Ftrl({.learning_rate = 0.05, .l1_regularization_strength = 1e-3})); }},
      {"Lion", [] { return OptimizerHandle(Lion({.learning_rate = 1e-3})); }},
      // Schedules are saved as their configs, so a loaded model keeps decaying from its step.
      {"AdamExponentialDecayStaircase",
       [] { return OptimizerHandle(Adam({.learning_rate = ExponentialDecay(0.02, 2, 0.5, /*staircase=*/true)})); }},
      {"SGDPiecewiseConstantDecay",
       [] { return OptimizerHandle(SGD({.learning_rate = PiecewiseConstantDecay({3, 4}, {0.05, 0.02, 0.01})})); }},
      {"AdamWCosineDecay", [] { return OptimizerHandle(AdamW({.learning_rate = CosineDecay(0.01, 8, 0.1)})); }},
      // Clipping is part of the optimizer config in every format.
      {"SGDClipnorm", [] { return OptimizerHandle(SGD({.learning_rate = 0.05, .clipnorm = 0.1})); }},
      {"AdamGlobalClipnorm", [] { return OptimizerHandle(Adam({.learning_rate = 0.01, .global_clipnorm = 0.1})); }},
      {"RMSpropClipvalue", [] { return OptimizerHandle(RMSprop({.learning_rate = 0.01, .clipvalue = 0.01})); }},
      // Keras 2's legacy Nadam (optimizer_v2's, with momentum_cache in .h5 files); Keras 3 lacks it.
      {"NadamLegacyScheduleDecay", [] { return OptimizerHandle(Nadam({.learning_rate = 0.01, .schedule_decay = 0.004})); },
       /*keras3=*/false},
  };
}

inline std::unique_ptr<Sequential> build_model(const ModelCase& c) {
  std::vector<LayerHandle> layers{InputLayer({.shape = c.input})};
  for (LayerHandle& l : c.layers()) layers.push_back(std::move(l));
  return std::make_unique<Sequential>(std::move(layers));
}

inline void compile_model(Model& model, OptimizerHandle optimizer) {
  model.compile({.optimizer = std::move(optimizer),
                 .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
}

/// `n` examples of `input` dims with smooth, distinct values, and labels in [0, 3).
inline std::pair<HostTensor, HostTensor> sample_data(const Dims& input, int64_t n, double phase = 0.0) {
  Dims dims{n};
  dims.insert(dims.end(), input.begin(), input.end());
  HostTensor x(Shape(DType::kF32, dims));
  auto xs = x.data<float>();
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + phase));
  HostTensor y(Shape(DType::kI32, {n}));
  auto ys = y.data<int32_t>();
  for (size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int32_t>((i * 7 + 1) % 3);
  return {x, y};
}

/// Trains `steps` batches of 4 (fixed order) without output.
inline void train(Model& model, const Dims& input, int64_t steps, double phase = 0.0) {
  auto [x, y] = sample_data(input, 4 * steps, phase);
  model.fit(data::Dataset::from_tensor_slices({x, y}).batch(4, /*drop_remainder=*/true), {.verbose = 0});
}

/// Bitwise equality of two tensor lists (same dtypes, dims and bytes).
inline void expect_same_tensors(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b,
                                const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape()) << what << " " << i;
    EXPECT_EQ(0, std::memcmp(a[i].raw_data(), b[i].raw_data(), static_cast<size_t>(a[i].byte_size())))
        << what << " " << i << " differs";
  }
}

inline std::vector<HostTensor> values_of(const std::vector<Variable>& vars) {
  std::vector<HostTensor> out;
  for (const Variable& v : vars) out.push_back(v.storage().clone());
  return out;
}

}  // namespace kiln::keras::testing
