// The seed's MLP (Flatten 784 -> Dense 128 relu -> Dense 10, sparse softmax cross-entropy from
// logits, Adam with Keras defaults) written against trace/ directly: one kiln::function whose
// single compiled program is forward, loss, backward and the Adam update. Shared by the e2e
// test and bench/train_step_mlp so both measure the same step. Other widths give the wide MLP
// (W3: 784 -> 1024 -> 1024 -> 10); a 16-bit compute dtype gives the step a Keras
// mixed-precision policy makes (compute_cast.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kiln/data/datasets/mnist.h"
#include "kiln/runtime/backend.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/variable.h"
#include "tests/testing/compute_cast.h"
#include "tests/testing/seed_training.h"

namespace kiln::testing {

/// MNIST as the peers feed it: f32 pixels / 255, flattened to 784, i32 labels.
struct MnistF32 {
  HostTensor x_train, y_train, x_test, y_test;
};

inline MnistF32 load_mnist_f32() {
  auto [train, test] = datasets::mnist::load_data();
  auto prep = [](const HostTensor& x) {
    HostTensor f = x.astype(DType::kF32).reshape({x.dims()[0], 784});
    for (float& v : f.data<float>()) v /= 255.0f;
    return f;
  };
  return {prep(train.x), train.y.astype(DType::kI32), prep(test.x), test.y.astype(DType::kI32)};
}

/// Copies rows perm[start .. start+batch) of x and y into the batch tensors.
inline void gather_batch(const MnistF32& d, const std::vector<int32_t>& perm, int64_t start, HostTensor& xb,
                         HostTensor& yb) {
  const int64_t batch = xb.dims()[0];
  const float* x = d.x_train.data<float>().data();
  const int32_t* y = d.y_train.data<int32_t>().data();
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t row = perm[static_cast<size_t>(start + i)];
    std::memcpy(xb.data<float>().data() + i * 784, x + row * 784, 784 * sizeof(float));
    yb.data<int32_t>()[static_cast<size_t>(i)] = y[row];
  }
}

class SeedMlp {
 public:
  /// `widths`: input features, then each Dense layer's units (relu between layers, logits
  /// last). `compute`: the layers' compute dtype (variables stay f32).
  explicit SeedMlp(std::shared_ptr<runtime::Backend> backend, uint32_t seed = 0, DType compute = DType::kF32,
                   const std::vector<int64_t>& widths = {784, 128, 10})
      : compute_(compute) {
    std::mt19937 rng(seed);
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      const std::string name = i == 0 ? "dense" : str_cat("dense_", i);
      params_.emplace_back(name + "/kernel", glorot_uniform(widths[i], widths[i + 1], rng));
      params_.emplace_back(name + "/bias", HostTensor(Shape(DType::kF32, {widths[i + 1]})));
    }
    adam_ = std::make_unique<KerasAdam>(params_);
    FunctionOptions options{.backend = backend};
    train_step_ = std::make_unique<Function>("train_step", [this](const std::vector<Tensor>& in) {
      GradientTape tape;
      Tensor logits = forward(in[0]);
      Tensor loss = mean(sparse_softmax_cross_entropy_with_logits(in[1], logits));
      std::vector<Tensor> grads = tape.gradient(loss, params_);
      adam_->apply(params_, grads);
      return std::vector<Tensor>{loss};
    }, options);
    predict_ = std::make_unique<Function>("predict", [this](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{argmax(forward(in[0]), 1)};
    }, options);
  }

  /// One step on a batch (x f32[B,784], y i32[B]); returns the loss.
  float train_step(const HostTensor& x, const HostTensor& y) {
    return (*train_step_)({x, y})[0].to_vector<float>()[0];
  }
  /// The same step on a batch already on the backend's device (a prefetch_to_device batch).
  float train_step_on_device(const std::vector<runtime::Buffer>& xy) {
    return train_step_->call_on_device(xy)[0].to_vector<float>()[0];
  }
  /// Fraction of correct predictions on (x, y).
  double accuracy(const HostTensor& x, const HostTensor& y) {
    HostTensor pred = (*predict_)({x})[0];
    auto p = pred.data<int32_t>();
    auto t = y.data<int32_t>();
    int64_t correct = 0;
    for (size_t i = 0; i < p.size(); ++i) correct += p[i] == t[i];
    return static_cast<double>(correct) / static_cast<double>(p.size());
  }
  const Function& train_function() const { return *train_step_; }
  const std::vector<Variable>& params() const { return params_; }

 private:
  Tensor forward(const Tensor& x) {
    Tensor h = to_compute(x, compute_);
    for (size_t i = 0; i < params_.size(); i += 2) {
      h = matmul(h, to_compute(params_[i], compute_)) + to_compute(params_[i + 1], compute_);
      if (i + 2 < params_.size()) h = relu(h);
    }
    return to_compute(h, DType::kF32);  // the loss runs in f32, as under a Keras policy
  }

  DType compute_;

  std::vector<Variable> params_;
  std::unique_ptr<KerasAdam> adam_;
  std::unique_ptr<Function> train_step_, predict_;
};

/// Calls `step(x_batch, y_batch, step_index)` for `epochs` epochs of batch 128 over the training
/// set (drop_remainder), with a fresh seeded permutation each epoch; `x_dims` shapes the batch
/// ({128, 784} for the MLP, {128, 28, 28, 1} for the convnet).
template <typename StepFn>
void for_each_train_batch(const MnistF32& d, Dims x_dims, int epochs, uint32_t seed, int64_t max_steps, StepFn step) {
  const int64_t batch = x_dims[0];
  const int64_t n = d.x_train.dims()[0];
  std::vector<int32_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937 rng(seed);
  HostTensor xb(Shape(DType::kF32, std::move(x_dims))), yb(Shape(DType::kI32, {batch}));
  int64_t index = 0;
  for (int e = 0; e < epochs; ++e) {
    std::shuffle(perm.begin(), perm.end(), rng);
    const int64_t steps = max_steps > 0 ? std::min(max_steps, n / batch) : n / batch;
    for (int64_t s = 0; s < steps; ++s) {
      gather_batch(d, perm, s * batch, xb, yb);
      step(xb, yb, index++);
    }
  }
}

/// Trains `epochs` epochs of batch 128 (drop_remainder) with a fresh permutation each epoch.
inline void train_epochs(SeedMlp& mlp, const MnistF32& d, int epochs, uint32_t seed = 1, int64_t max_steps = -1) {
  for_each_train_batch(d, {128, 784}, epochs, seed, max_steps,
                       [&](const HostTensor& x, const HostTensor& y, int64_t) { mlp.train_step(x, y); });
}

}  // namespace kiln::testing
