// GradientTape: reverse-mode autodiff. While a tape lives it records every op applied on this
// thread (in the trace that was current when it started, or eagerly); gradient() walks the
// records backwards applying the VJP tables of trace/vjp, so in a trace the backward pass is
// IR in the same module, and eagerly it runs op by op on concrete tensors.
#pragma once

#include <initializer_list>
#include <memory>
#include <vector>

#include "kiln/ir/attrs.h"
#include "kiln/ir/opcode.h"
#include "kiln/trace/tensor.h"
#include "kiln/trace/variable.h"

namespace kiln {

/// A tensor or a variable to differentiate with respect to.
struct GradientSource {
  GradientSource(const Tensor& t) : tensor(t) {}      // NOLINT: implicit on purpose
  GradientSource(const Variable& v) : variable(v) {}  // NOLINT
  Tensor tensor;
  Variable variable;
};

class GradientTape {
 public:
  /// Starts recording ops of this thread (stacked: nested tapes all record).
  GradientTape();
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /// d target / d source for each source, shaped like the source. `target` is usually a
  /// scalar loss; a non-scalar target is summed (its cotangent is ones). Sources the target
  /// does not depend on through recorded ops get zeros. Integer and bool values get no
  /// gradient, and ops listed as non-differentiable (compare, argmax, rng_bits, ...) stop it,
  /// as in TF. Throws CompileError naming the op when the gradient must flow through an op
  /// that has no VJP rule.
  /// A variable's gradient flows through its reads made while the tape was recording.
  std::vector<Tensor> gradient(const Tensor& target, std::initializer_list<GradientSource> sources);
  template <typename T>
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<T>& sources) {
    return gradient_impl(target, std::vector<GradientSource>(sources.begin(), sources.end()));
  }
  Tensor gradient(const Tensor& target, const GradientSource& source);

  /// Number of ops recorded so far (for tests).
  size_t recorded_ops() const;

  struct Impl;

 private:
  std::vector<Tensor> gradient_impl(const Tensor& target, const std::vector<GradientSource>& sources);
  std::unique_ptr<Impl> impl_;
};

/// x, with the gradient stopped: ops on the result do not flow back into x.
Tensor stop_gradient(const Tensor& x);

namespace trace {

/// Suspends recording on every tape of this thread for the scope's lifetime.
class PauseTapes {
 public:
  PauseTapes();
  ~PauseTapes();
  PauseTapes(const PauseTapes&) = delete;
  PauseTapes& operator=(const PauseTapes&) = delete;
};

/// Called by emit() for every op: records it on the active tapes of its context.
void record_on_tapes(ir::Opcode op, const ir::Attrs& attrs, const std::vector<Tensor>& operands,
                     const Tensor& output);
/// Called by Variable::read(): lets tapes map the variable to the tensor read.
void record_variable_read(const std::shared_ptr<VariableState>& variable, const Tensor& value);

}  // namespace trace

}  // namespace kiln
