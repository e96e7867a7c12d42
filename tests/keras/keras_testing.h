// Helpers shared by the Keras tests: scalar reads, a small MNIST subset pipeline and synthetic
// MNIST-shaped data.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <utility>

#include "kiln/core/error.h"
#include "kiln/data/dataset.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/keras/keras.h"

namespace kiln::keras::testing {

inline double scalar(const Tensor& t) { return t.to_vector<double>()[0]; }
inline double scalar(const Variable& v) { return v.storage().to_vector<double>()[0]; }

/// The first `n` images of a split as f32 [n,28,28] / 255 and i32 labels, or nullopt when the
/// MNIST files are absent.
struct MnistSubset {
  HostTensor x_train, y_train, x_test, y_test;
};
inline std::optional<MnistSubset> load_mnist_subset(int64_t train_n, int64_t test_n) {
  try {
    auto [train, test] = datasets::mnist::load_data();
    auto prep = [](const HostTensor& x, int64_t n) {
      HostTensor f = x.slice_rows(0, n).astype(DType::kF32);
      for (float& v : f.data<float>()) v /= 255.0f;
      return f;
    };
    return MnistSubset{prep(train.x, train_n), train.y.slice_rows(0, train_n).astype(DType::kI32),
                       prep(test.x, test_n), test.y.slice_rows(0, test_n).astype(DType::kI32)};
  } catch (const DataError&) {
    return std::nullopt;
  }
}

/// n MNIST-shaped examples: f32[n,28,28] uniform in [0,1) and i32[n] labels in 0..9.
inline std::pair<HostTensor, HostTensor> synthetic_mnist(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  std::uniform_int_distribution<int32_t> label(0, 9);
  HostTensor x(Shape(DType::kF32, {n, 28, 28})), y(Shape(DType::kI32, {n}));
  for (float& v : x.data<float>()) v = pixel(rng);
  for (int32_t& v : y.data<int32_t>()) v = label(rng);
  return {x, y};
}

/// (x, y) batches of `batch` rows, in order, dropping the remainder.
inline data::Dataset batches(const HostTensor& x, const HostTensor& y, int64_t batch) {
  return data::Dataset::from_tensor_slices({x, y}).batch(batch, /*drop_remainder=*/true);
}

}  // namespace kiln::keras::testing
