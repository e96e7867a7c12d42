// Shared by the layers' own tests: f64 gradient options for whole layers built under the
// "float64" policy, ramps for hand-computed cases and config fixed points. What every layer owes
// (saving, modes, mixed precision) is in the layer harness (layer_harness.h).
#pragma once

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "tests/keras/keras_testing.h"
#include "tests/keras/layer_gradients.h"

namespace kiln::keras::testing {

/// Central differences in f64 (layers made with {.dtype = "float64"}, inputs random_f64).
inline kiln::testing::GradCheckOptions f64_grad_options() { return {.eps = 1e-6, .rtol = 1e-6, .atol = 1e-8}; }

/// f32 values 1, 2, 3, ... of `dims` (row-major), for hand-computed cases.
inline HostTensor ramp(Dims dims) {
  HostTensor t(Shape(DType::kF32, std::move(dims)));
  auto v = t.data<float>();
  std::iota(v.begin(), v.end(), 1.0f);
  return t;
}

/// get_config -> layer_from_config -> get_config gives the same text.
inline void expect_config_round_trip(const Layer& layer) {
  const std::string config = layer.get_config();
  EXPECT_EQ(layer_from_config(layer.class_name(), config)->get_config(), config) << layer.class_name();
}

}  // namespace kiln::keras::testing
