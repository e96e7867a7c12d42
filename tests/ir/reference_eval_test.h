// Shared fixture for the reference evaluator tests: builds a one-output module with Builder and
// evaluates it on given arguments.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kiln/core/str_cat.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/ir/reference_eval.h"

namespace kiln::ir {

/// A tensor of uniform values in [-1, 1).
inline HostTensor random_f64(Dims dims, std::mt19937& gen) {
  HostTensor t(Shape(DType::kF64, std::move(dims)));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (double& v : t.data<double>()) v = u(gen);
  return t;
}

/// <a, b> of two f64 tensors of equal size.
inline double inner_product(const HostTensor& a, const HostTensor& b) {
  auto x = a.data<double>();
  auto y = b.data<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

class ReferenceEvalFixture : public ::testing::Test {
 protected:
  /// Adds a parameter bound to `value` in the next eval().
  Instruction* arg(HostTensor value) {
    args_.push_back(value);
    return b_.parameter(value.shape(), str_cat("p", args_.size() - 1));
  }
  template <typename T>
  Instruction* arg(Dims dims, std::vector<T> values) {
    return arg(HostTensor::from_vector<T>(std::move(dims), values));
  }
  /// Evaluates the entry with `out` as its only output.
  HostTensor eval(Instruction* out) {
    m_.entry()->set_outputs({out});
    return evaluate(m_, args_)[0];
  }
  template <typename T>
  std::vector<T> eval_as(Instruction* out) {
    return eval(out).to_vector<T>();
  }

  Module m_{"m"};
  Builder b_{m_.entry()};
  std::vector<HostTensor> args_;
};

}  // namespace kiln::ir
