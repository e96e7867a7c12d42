// Finite-difference gradient checks of a whole Keras layer: d(layer(x))/dx and d/d(each
// trainable weight). The weights enter as inputs and are assigned before the call, so the
// traced read of a weight is that input itself and the tape reaches it. Layers hold f32
// weights, so the check runs in f32 with a wide step; the ops beneath are checked in f64 in
// tests/trace.
#pragma once

#include <algorithm>
#include <random>

#include "kiln/keras/layers/layer.h"
#include "tests/testing/finite_difference.h"

namespace kiln::keras::testing {

/// Options sized for f32: central differences with step 1e-2 on functions of O(1) values.
inline kiln::testing::GradCheckOptions f32_grad_options(double eps = 1e-2, double tol = 1e-2) {
  return {.eps = eps, .rtol = tol, .atol = tol};
}

/// Checks `layer` (built from x's per-example dims) on x in the given mode.
inline ::testing::AssertionResult check_layer_gradients(Layer& layer, const HostTensor& x, bool training,
                                                        kiln::testing::GradCheckOptions options = f32_grad_options()) {
  layer.build(Dims(x.dims().begin() + 1, x.dims().end()));
  const std::vector<Variable> weights = layer.trainable_weights();
  std::vector<HostTensor> inputs{x};
  for (const Variable& w : weights) inputs.push_back(w.storage().clone());
  auto f = [&](const std::vector<Tensor>& xs) {
    for (size_t i = 0; i < weights.size(); ++i) weights[i].assign(xs[i + 1]);
    return layer(xs[0], training);
  };
  return kiln::testing::check_gradients(f, inputs, options);
}

/// f32 values of `dims` that are a shuffled ramp with steps of `spacing` around 0: distinct
/// and far apart, so max pooling has no near-ties under a finite-difference step.
inline HostTensor spaced_f32(Dims dims, uint32_t seed, double spacing = 0.05) {
  HostTensor t(Shape(DType::kF32, std::move(dims)));
  auto v = t.data<float>();
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((static_cast<double>(i) - static_cast<double>(v.size()) / 2) * spacing);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return t;
}

}  // namespace kiln::keras::testing
