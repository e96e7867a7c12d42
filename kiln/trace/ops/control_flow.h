// Structured control flow on Tensors: while_loop, cond and switch_case (jax.lax's). Traced,
// each is one while/conditional instruction whose functions become nested computations;
// eagerly, the functions simply run. scan (the loop with a known trip count, and a gradient)
// lives in scan.h.
#pragma once

#include <functional>
#include <vector>

#include "kiln/trace/tensor.h"

namespace kiln {

/// A loop body or a branch: values in, values out.
using BranchFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& values)>;
/// A loop condition: values in, a bool scalar out.
using ConditionFn = std::function<Tensor(const std::vector<Tensor>& values)>;

/// jax.lax.while_loop: values = init; while cond_fn(values): values = body_fn(values).
/// body_fn must return values of init's shapes and dtypes. Traced, the functions are traced
/// once (symbolic tensors they use from outside become inputs of the loop). Its trip count is
/// unknown, so a gradient through it is a CompileError: use scan for a differentiable loop.
std::vector<Tensor> while_loop(const ConditionFn& cond_fn, const BranchFn& body_fn, const std::vector<Tensor>& init);

/// jax.lax.cond: true_fn(operands) where `pred` (a bool scalar) holds, else false_fn(operands).
/// Both must return the same shapes. Gradients flow through the branch taken.
std::vector<Tensor> cond(const Tensor& pred, const BranchFn& true_fn, const BranchFn& false_fn,
                         const std::vector<Tensor>& operands);

/// branches[index](operands) for an i32 scalar `index`; an index out of range runs the last
/// branch (XLA's conditional). Every branch must return the same shapes.
std::vector<Tensor> switch_case(const Tensor& index, const std::vector<BranchFn>& branches,
                                const std::vector<Tensor>& operands);

}  // namespace kiln
