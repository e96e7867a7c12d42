// GradientTape: reverse-mode autodiff. While a tape lives it records every op applied on this
// thread (in the trace that was current when it started, or eagerly); gradient() walks the
// records backwards applying the VJP tables of trace/vjp, so in a trace the backward pass is
// IR in the same module, and eagerly it runs op by op on concrete tensors.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
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
  /// The vector-Jacobian product: each target's cotangent starts as its output gradient (of
  /// its shape), as tf.GradientTape.gradient's output_gradients; the sources get the sum of
  /// what flows back from all targets.
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, const std::vector<Tensor>& output_gradients,
                               const std::vector<GradientSource>& sources);

  /// Number of ops recorded so far (for tests).
  size_t recorded_ops() const;

  struct Impl;

 private:
  std::vector<Tensor> gradient_impl(const Tensor& target, const std::vector<GradientSource>& sources);
  std::vector<Tensor> vjp_impl(const std::vector<Tensor>& targets, const std::vector<Tensor>& seeds,
                               const std::vector<GradientSource>& sources);
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
/// The VJP of a composite op (while_loop, scan, cond): the cotangent of every output (zeros
/// where none flowed) -> one per operand (undefined: none), for the operands `needs` marks.
using CompositeVjp = std::function<std::vector<Tensor>(const std::vector<Tensor>& output_cotangents,
                                                       const std::vector<bool>& needs)>;
/// Records a composite op with several outputs on the active tapes. With a null `vjp`
/// a gradient through it is a CompileError naming `name`.
void record_composite_on_tapes(std::string name, const std::vector<Tensor>& operands,
                               const std::vector<Tensor>& outputs, CompositeVjp vjp);
/// True when a tape of the current trace (or eager) records: a composite op then keeps
/// what its VJP needs.
bool tapes_recording();

/// Called by Variable::read(): lets tapes map the variable to the tensor read.
void record_variable_read(const std::shared_ptr<VariableState>& variable, const Tensor& value);

}  // namespace trace

}  // namespace kiln
