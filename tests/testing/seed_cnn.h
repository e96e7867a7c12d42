// The Keras MNIST convnet (peer workload W2: Conv2D 32 3x3 relu -> MaxPool 2 -> Conv2D 64 3x3
// relu -> MaxPool 2 -> Flatten -> Dropout 0.5 -> Dense 10; sparse softmax cross-entropy from
// logits; Adam with Keras defaults) written against trace/ directly: one kiln::function whose
// compiled program is forward, loss, backward and the Adam update. Shared by
// bench/train_step_cnn and end-to-end tests so both measure the same step. A 16-bit compute
// dtype gives the step a Keras mixed-precision policy makes (compute_cast.h).
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kiln/trace/ops/random.h"
#include "kiln/trace/ops/shape.h"
#include "tests/testing/seed_mlp.h"
#include "tests/testing/seed_training.h"

namespace kiln::testing {

class SeedCnn {
 public:
  static constexpr double kDropout = 0.5;

  /// `compute`: the layers' compute dtype (variables stay f32).
  explicit SeedCnn(std::shared_ptr<runtime::Backend> backend, uint32_t seed = 0, DType compute = DType::kF32)
      : compute_(compute) {
    std::mt19937 rng(seed);
    // Conv fans are kh * kw * channels (Keras); the dense layer sees 5 * 5 * 64 = 1600 features.
    params_ = {Variable("conv2d/kernel", glorot_uniform({3, 3, 1, 32}, 9 * 1, 9 * 32, rng)),
               Variable("conv2d/bias", HostTensor(Shape(DType::kF32, {32}))),
               Variable("conv2d_1/kernel", glorot_uniform({3, 3, 32, 64}, 9 * 32, 9 * 64, rng)),
               Variable("conv2d_1/bias", HostTensor(Shape(DType::kF32, {64}))),
               Variable("dense/kernel", glorot_uniform({1600, 10}, 1600, 10, rng)),
               Variable("dense/bias", HostTensor(Shape(DType::kF32, {10})))};
    adam_ = std::make_unique<KerasAdam>(params_);
    FunctionOptions options{.backend = backend};
    // in: x f32[B, 28, 28, 1], y i32[B], dropout key i64[].
    train_step_ = std::make_unique<Function>("train_step", [this](const std::vector<Tensor>& in) {
      GradientTape tape;
      Tensor logits = forward(in[0], &in[2]);
      Tensor loss = mean(sparse_softmax_cross_entropy_with_logits(in[1], logits));
      std::vector<Tensor> grads = tape.gradient(loss, params_);
      adam_->apply(params_, grads);
      return std::vector<Tensor>{loss};
    }, options);
    predict_ = std::make_unique<Function>("predict", [this](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{argmax(forward(in[0], nullptr), 1)};
    }, options);
  }

  /// One step on a batch (x f32[B,28,28,1], y i32[B]); `key` seeds this step's dropout mask.
  float train_step(const HostTensor& x, const HostTensor& y, int64_t key) {
    HostTensor k(Shape(DType::kI64, {}));
    k.data<int64_t>()[0] = key;
    return (*train_step_)({x, y, k})[0].to_vector<float>()[0];
  }
  /// The same step on x, y and the dropout key (i64[]) already on the backend's device.
  float train_step_on_device(const std::vector<runtime::Buffer>& x_y_key) {
    return train_step_->call_on_device(x_y_key)[0].to_vector<float>()[0];
  }
  /// Fraction of correct predictions on (x f32[N,784] or f32[N,28,28,1], y), in chunks of
  /// `chunk` images so the activations stay small.
  double accuracy(const HostTensor& x, const HostTensor& y, int64_t chunk = 500) {
    const int64_t n = x.dims()[0];
    const float* src = x.data<float>().data();
    auto t = y.data<int32_t>();
    int64_t correct = 0;
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t rows = std::min(chunk, n - start);
      HostTensor xb(Shape(DType::kF32, {rows, 28, 28, 1}));
      std::memcpy(xb.raw_data(), src + start * 784, static_cast<size_t>(rows * 784) * sizeof(float));
      HostTensor pred = (*predict_)({xb})[0];
      auto p = pred.data<int32_t>();
      for (int64_t i = 0; i < rows; ++i) correct += p[static_cast<size_t>(i)] == t[static_cast<size_t>(start + i)];
    }
    return static_cast<double>(correct) / static_cast<double>(n);
  }
  const Function& train_function() const { return *train_step_; }
  const std::vector<Variable>& params() const { return params_; }

 private:
  // x: (B, 28, 28, 1) -> (B, 26, 26, 32) -> (B, 13, 13, 32) -> (B, 11, 11, 64) -> (B, 5, 5, 64)
  // -> (B, 1600) -> logits (B, 10). Dropout only when a key is given (training).
  Tensor forward(const Tensor& x, const Tensor* dropout_key) {
    auto c = [this](const Tensor& t) { return to_compute(t, compute_); };
    Tensor h = max_pool2d(relu(conv2d(c(x), c(params_[0])) + c(params_[1])));
    h = max_pool2d(relu(conv2d(h, c(params_[2])) + c(params_[3])));
    h = reshape(h, {h.dims()[0], 1600});
    if (dropout_key != nullptr) h = dropout(h, kDropout, *dropout_key);
    return to_compute(matmul(h, c(params_[4])) + c(params_[5]), DType::kF32);  // the loss in f32
  }

  DType compute_;

  std::vector<Variable> params_;
  std::unique_ptr<KerasAdam> adam_;
  std::unique_ptr<Function> train_step_, predict_;
};

/// Trains `epochs` epochs of batch 128 (drop_remainder) with a fresh permutation each epoch;
/// step s of the run draws its dropout mask from key s.
inline void train_epochs(SeedCnn& cnn, const MnistF32& d, int epochs, uint32_t seed = 1, int64_t max_steps = -1) {
  for_each_train_batch(d, {128, 28, 28, 1}, epochs, seed, max_steps,
                       [&](const HostTensor& x, const HostTensor& y, int64_t key) { cnn.train_step(x, y, key); });
}

}  // namespace kiln::testing
