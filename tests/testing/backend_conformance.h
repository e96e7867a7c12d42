// Backend conformance helper: build a module, run it on a backend and on the reference
// evaluator (the oracle) with the same seeded random arguments, and compare every output.
// Shared by the CPU backend tests and the per-kernel oneDNN adapter tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/backend.h"
#include "kiln/runtime/cpu/cpu_backend.h"

namespace kiln::testing {

/// Uniform values in [lo, hi) of `shape` from `seed`, drawn in f64 and rounded once.
inline HostTensor random_tensor(const Shape& shape, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  HostTensor t(shape.with_dtype(DType::kF64));
  for (double& v : t.data<double>()) v = dist(rng);
  return t.astype(shape.dtype());
}

/// Makes the outputs of a module from its parameters.
using BuildFn = std::function<std::vector<ir::Instruction*>(ir::Builder&, std::vector<ir::Instruction*>&)>;

struct MatchOptions {
  double tol = 1e-5;  // |actual - expected| <= tol * (1 + |expected|)
  runtime::Backend* backend = nullptr;  // the CPU backend when null
  int* kernel_count = nullptr;          // receives the executable's kernel launches
  std::string* steps = nullptr;         // receives the executable's describe() (step labels)
  const DebugOptions* debug = nullptr;  // compile options (DebugOptions::global() when null)
};

/// Builds a module with `build` over parameters of `params`, runs it on the backend and on
/// ir::evaluate with the same random arguments (seeds 1, 2, ...), and compares every output.
inline void expect_matches_reference(const std::vector<Shape>& params, const BuildFn& build,
                                     const MatchOptions& options = {}) {
  auto make = [&]() {
    auto m = std::make_unique<ir::Module>("test");
    ir::Builder b(m->entry());
    std::vector<ir::Instruction*> ps;
    for (size_t i = 0; i < params.size(); ++i) ps.push_back(b.parameter(params[i], str_cat("p", i)));
    m->entry()->set_outputs(build(b, ps));
    return m;
  };
  std::vector<HostTensor> args;
  for (size_t i = 0; i < params.size(); ++i) args.push_back(random_tensor(params[i], static_cast<uint32_t>(i + 1)));
  std::vector<HostTensor> expected = ir::evaluate(*make(), args);
  std::unique_ptr<runtime::Backend> cpu;
  runtime::Backend* backend = options.backend;
  if (backend == nullptr) {
    cpu = cpu::make_cpu_backend();
    backend = cpu.get();
  }
  runtime::CompileOptions compile_options;
  if (options.debug != nullptr) compile_options.debug = *options.debug;
  auto exe = backend->compile(make(), compile_options);
  if (options.kernel_count != nullptr) *options.kernel_count = exe->kernel_count();
  if (options.steps != nullptr) *options.steps = exe->describe();
  std::vector<HostTensor> actual = exe->run(args);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    ASSERT_EQ(actual[k].shape(), expected[k].shape()) << "output " << k;
    auto a = actual[k].to_vector<double>();
    auto e = expected[k].to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == e[i] || (std::isnan(a[i]) && std::isnan(e[i]))) continue;  // equal infinities too
      ASSERT_NEAR(a[i], e[i], options.tol * (1.0 + std::fabs(e[i])))
          << "output " << k << " element " << i << "\n" << exe->describe();
    }
  }
}

}  // namespace kiln::testing
