// Helpers shared by the Keras tests: scalar reads and a small MNIST subset pipeline.
#pragma once

#include <gtest/gtest.h>

#include <optional>

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

/// (x, y) batches of `batch` rows, in order, dropping the remainder.
inline data::Dataset batches(const HostTensor& x, const HostTensor& y, int64_t batch) {
  return data::Dataset::from_tensor_slices({x, y}).batch(batch, /*drop_remainder=*/true);
}

}  // namespace kiln::keras::testing
