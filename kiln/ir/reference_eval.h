// The reference evaluator: slow, obviously correct evaluation of every op on HostTensors. It is
// the oracle every backend, pass and gradient check is compared against, so it favours plain
// loops over speed. Arithmetic: 16-bit floats compute in f32 and round once per op; f32 and f64
// compute in their own type; sums inside dot_general, convolution and reduce_sum accumulate in
// f64 for f32/f64 and in f32 for 16-bit floats; integers are exact (two's-complement wrap).
#pragma once

#include <span>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/ir/module.h"

namespace kiln::ir {

/// Evaluates `computation` with `arguments` bound to its parameters (in index order) and
/// returns its outputs. Throws ShapeError when an argument does not match its parameter.
/// Outputs never share storage with the arguments or with constants.
std::vector<HostTensor> evaluate(const Computation& computation,
                                 std::span<const HostTensor> arguments);

/// Evaluates the module's entry computation. Aliases are not applied: the caller (e.g. the
/// reference backend) decides whether to write aliased outputs into their arguments.
std::vector<HostTensor> evaluate(const Module& module, std::span<const HostTensor> arguments);

/// Evaluates `computation` as the replicas of a data-parallel step: arguments[r] are replica
/// r's, and each collective combines the replicas' values (replica ids 0..n-1, as a strategy
/// numbers them). Returns each replica's outputs. Collectives inside while/conditional are not
/// evaluated across replicas (evaluate() each replica instead when there are none).
std::vector<std::vector<HostTensor>> evaluate_replicas(const Computation& computation,
                                                       std::span<const std::vector<HostTensor>> arguments);

/// Evaluates one instruction on concrete operand values (one per operand). Parameters have no
/// value of their own and are rejected; a fusion evaluates its body. A while or conditional
/// yields several values: evaluate it with evaluate_tuple (get_tuple_element is evaluate()'s).
HostTensor evaluate_instruction(const Instruction& instruction,
                                std::span<const HostTensor> operand_values);

/// The results of a while or conditional on concrete operand values (fresh storage).
std::vector<HostTensor> evaluate_tuple(const Instruction& instruction,
                                       std::span<const HostTensor> operand_values);

}  // namespace kiln::ir
