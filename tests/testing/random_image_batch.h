// Random MNIST-shaped batches (pixels in [0, 1), labels in [0, 10)): what the GPU step tests
// and bench/train_step_gpu feed when the values do not matter, only the work, so the device
// machine needs no MNIST for them. No gtest, so benches include it too.
#pragma once

#include <cstdint>
#include <random>
#include <utility>

#include "kiln/core/host_tensor.h"

namespace kiln::testing {

/// Random images of `image_dims` (batch first) with pixels in [0, 1) and labels in [0, 10),
/// from `seed`.
inline std::pair<HostTensor, HostTensor> random_image_batch(const Dims& image_dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> label(0, 9);
  HostTensor x = HostTensor::uninitialized(Shape(DType::kF32, image_dims));
  HostTensor y = HostTensor::uninitialized(Shape(DType::kI32, {image_dims[0]}));
  for (float& v : x.data<float>()) v = pixel(rng);
  for (int32_t& v : y.data<int32_t>()) v = label(rng);
  return {x, y};
}

}  // namespace kiln::testing
