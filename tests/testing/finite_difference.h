// Finite-difference gradient checker: compares GradientTape gradients of a function (traced
// with kiln::function on the reference backend, or run eagerly) against central differences
// in f64, and reports the worst element. Non-scalar outputs are projected onto a fixed random
// direction first, so the check covers the whole Jacobian-vector product.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/runtime/reference/reference_backend.h"
#include "kiln/trace/eager.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"

namespace kiln::testing {

struct GradCheckOptions {
  double eps = 1e-6;
  double rtol = 1e-6;
  double atol = 1e-8;
  /// Compute the analytic gradient eagerly (eager tape) instead of in a kiln::function.
  bool eager = false;
  /// Where both the gradient and the differences run (null: the reference backend, in f64).
  std::shared_ptr<runtime::Backend> backend;
};

/// `count` values uniform in [lo, hi) as an f64 tensor of `dims` (fixed seed per call site).
inline HostTensor random_f64(Dims dims, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  HostTensor t(Shape(DType::kF64, std::move(dims)));
  for (double& v : t.data<double>()) v = dist(gen);
  return t;
}

/// Checks d(sum(f(xs) * w))/dxs against central differences for every floating input.
inline ::testing::AssertionResult check_gradients(
    const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<HostTensor> inputs,
    GradCheckOptions options = {}) {
  std::shared_ptr<runtime::Backend> backend = options.backend ? options.backend : runtime::make_reference_backend();
  HostTensor direction;  // fixed random projection of f's output, made at the first trace
  auto projected = [&](const std::vector<Tensor>& xs) {
    Tensor y = f(xs);
    if (!direction.defined()) direction = random_f64(y.dims(), 1234u).astype(y.dtype());
    return reduce_sum(y * constant(direction));
  };
  auto analytic = [&](const std::vector<Tensor>& xs) {
    GradientTape tape;
    Tensor loss = projected(xs);
    std::vector<GradientSource> sources(xs.begin(), xs.end());
    return tape.gradient(loss, sources);
  };
  std::vector<HostTensor> grads;
  if (options.eager) {
    trace::EagerScope scope(backend);
    std::vector<Tensor> xs;
    for (const HostTensor& x : inputs) xs.push_back(Tensor(x));
    for (const Tensor& g : analytic(xs)) grads.push_back(g.value());
  } else {
    grads = Function("grad_check", analytic, {.backend = backend})(inputs);
  }
  Function forward("grad_check_forward", projected, {.backend = backend});

  std::ostringstream report;
  double worst = -1;
  int failures = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_floating(inputs[i].dtype())) continue;
    HostTensor a = grads[i].astype(DType::kF64);
    for (int64_t j = 0; j < inputs[i].num_elements(); ++j) {
      std::vector<HostTensor> plus = inputs, minus = inputs;
      plus[i] = inputs[i].astype(DType::kF64).clone();
      minus[i] = plus[i].clone();
      plus[i].data<double>()[static_cast<size_t>(j)] += options.eps;
      minus[i].data<double>()[static_cast<size_t>(j)] -= options.eps;
      plus[i] = plus[i].astype(inputs[i].dtype());
      minus[i] = minus[i].astype(inputs[i].dtype());
      double fp = forward(plus)[0].to_vector<double>()[0];
      double fm = forward(minus)[0].to_vector<double>()[0];
      double numeric = (fp - fm) / (2 * options.eps);
      double got = a.data<double>()[static_cast<size_t>(j)];
      double err = std::abs(got - numeric);
      double allowed = options.atol + options.rtol * std::abs(numeric);
      bool bad = !(err <= allowed);
      failures += bad;
      if (bad && err / allowed > worst) {
        worst = err / allowed;
        report.str("");
        report << "worst element: input " << i << " " << inputs[i].shape() << " index " << j
               << ": analytic " << got << ", numeric " << numeric << ", |diff| " << err
               << " > allowed " << allowed;
      }
    }
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << failures << " gradient element(s) disagree; "
                                       << report.str();
}

}  // namespace kiln::testing
