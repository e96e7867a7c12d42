// The three Keras models whose predictions batch-invariant inference is checked and measured
// on (tests/e2e/predict_batch_invariance_test.cpp, bench/predict_batch_invariance): the seed
// MLP, the MNIST convnet and the character LSTM, each with fixed initial weights and inputs
// of its own kind (images in [0, 1], token ids).
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "examples/mnist_cnn_model.h"
#include "examples/text_lstm.h"
#include "kiln/keras/keras.h"

namespace kiln::testing {

struct InferenceModel {
  std::string name;
  std::unique_ptr<keras::Model> model;
  HostTensor x;  // `rows` inputs
};

inline HostTensor uniform_images(int64_t rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(rows * 28 * 28));
  for (float& p : v) p = dist(gen);
  return HostTensor::from_vector<float>({rows, 28, 28, 1}, v);
}

/// The seed MLP, the convnet and the LSTM (vocabulary 40, 16 steps, 64 units), over `rows` inputs.
inline std::vector<InferenceModel> inference_models(int64_t rows) {
  using namespace kiln::keras;
  std::vector<InferenceModel> out;
  auto mlp = std::make_unique<Sequential>(std::vector<LayerHandle>{
      Flatten({.input_shape = {28, 28, 1}}), Dense(128, {.activation = "relu"}), Dense(10)});
  out.push_back({"seed_mlp", std::move(mlp), uniform_images(rows, 1)});
  out.push_back({"convnet", examples::make_mnist_cnn({.seed = 7}), uniform_images(rows, 2)});
  const int64_t vocab = 40, steps = 16;
  std::mt19937 gen(3);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> ids(static_cast<size_t>(rows * steps));
  for (int32_t& t : ids) t = token(gen);
  out.push_back({"text_lstm", examples::text_lstm::build_model(vocab, {.seq_len = steps, .embed_dim = 16, .units = 64}),
                 HostTensor::from_vector<int32_t>({rows, steps}, ids)});
  return out;
}

}  // namespace kiln::testing
