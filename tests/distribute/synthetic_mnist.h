// Deterministic MNIST-shaped data (f32[n,784] pixels in [0,1), i32[n] labels) for the
// replica-equivalence tests: the same bytes in every process and run, no files needed.
#pragma once

#include <random>

#include "kiln/core/host_tensor.h"

namespace kiln::testing {

struct SyntheticMnist {
  HostTensor x, y;
};

inline SyntheticMnist synthetic_mnist(int64_t n, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> label(0, 9);
  SyntheticMnist d{HostTensor(Shape(DType::kF32, {n, 784})), HostTensor(Shape(DType::kI32, {n}))};
  for (float& v : d.x.data<float>()) v = pixel(rng);
  for (int32_t& v : d.y.data<int32_t>()) v = label(rng);
  return d;
}

}  // namespace kiln::testing
