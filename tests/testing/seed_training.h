// Pieces the seed models (SeedMlp, SeedCnn) share: Keras glorot_uniform initialization and
// Keras 2 Adam written on trace/ ops, so its update is part of the compiled train step.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/replica_context.h"
#include "kiln/trace/variable.h"

namespace kiln::testing {

/// Keras glorot_uniform: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)), f32 of `dims`.
inline HostTensor glorot_uniform(const Dims& dims, int64_t fan_in, int64_t fan_out, std::mt19937& rng) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  std::uniform_real_distribution<float> dist(static_cast<float>(-limit), static_cast<float>(limit));
  HostTensor t(Shape(DType::kF32, dims));
  for (float& v : t.data<float>()) v = dist(rng);
  return t;
}

/// A dense kernel (fan_in, fan_out).
inline HostTensor glorot_uniform(int64_t fan_in, int64_t fan_out, std::mt19937& rng) {
  return glorot_uniform({fan_in, fan_out}, fan_in, fan_out, rng);
}

/// Keras 2 Adam with its slot variables ("Adam/<param>/m", ".../v", "Adam/iterations").
class KerasAdam {
 public:
  static constexpr double kLearningRate = 1e-3, kBeta1 = 0.9, kBeta2 = 0.999, kEpsilon = 1e-7;

  explicit KerasAdam(const std::vector<Variable>& params) {
    for (const Variable& p : params) {
      m_.emplace_back("Adam/" + p.name() + "/m", HostTensor(p.shape()));
      v_.emplace_back("Adam/" + p.name() + "/v", HostTensor(p.shape()));
    }
    iterations_ = Variable("Adam/iterations", HostTensor(Shape(DType::kF32, {})), /*trainable=*/false);
  }

  /// Traces one update: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t);
  /// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; w -= lr_t m / (sqrt(v) + eps).
  void apply(std::vector<Variable>& params, const std::vector<Tensor>& grads) {
    Tensor t = iterations_.read() + 1.0;
    iterations_.assign(t);
    Shape scalar(DType::kF32, {});
    Tensor lr_t = kLearningRate * sqrt(1.0 - pow(full(scalar, kBeta2), t)) / (1.0 - pow(full(scalar, kBeta1), t));
    for (size_t i = 0; i < params.size(); ++i) {
      // Under a strategy with several replicas, the replicas' mean gradient (identity otherwise).
      Tensor g = all_reduce(grads[i], ir::ReduceKind::kMean);
      Tensor m = kBeta1 * m_[i].read() + (1.0 - kBeta1) * g;
      Tensor v = kBeta2 * v_[i].read() + (1.0 - kBeta2) * g * g;
      m_[i].assign(m);
      v_[i].assign(v);
      params[i].assign(params[i].read() - lr_t * m / (sqrt(v) + kEpsilon));
    }
  }

 private:
  std::vector<Variable> m_, v_;
  Variable iterations_;
};

}  // namespace kiln::testing
