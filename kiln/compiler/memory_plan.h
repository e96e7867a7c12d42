// MemoryPlan: where every value of the entry computation lives during a step: one arena with
// liveness-based offsets and in-place reuse, the caller's argument buffers (donated when a
// variable is updated), fresh output tensors, and constants. The backend lowers against it,
// and its peak is known before anything runs (seed S25).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/compiler/target_info.h"
#include "kiln/ir/module.h"

namespace kiln::compiler {

enum class BufferKind {
  kArena,      // [offset, offset+size) inside the step's arena
  kParameter,  // the caller's argument `parameter_index` (parameters only)
  kDonated,    // written straight into argument `parameter_index`'s storage (a variable update)
  kOutput,     // a fresh tensor returned as output `output_index`
  kConstant,   // the instruction's literal, held by the executable
  kAlias,      // the same bytes as `alias_of` (reshape of a row-major buffer: no copy)
};

struct BufferInfo {
  BufferKind kind = BufferKind::kArena;
  int64_t offset = 0;  // kArena only
  int64_t size = 0;    // bytes
  int parameter_index = -1;                // kParameter, kDonated
  int output_index = -1;                   // kOutput
  const ir::Instruction* alias_of = nullptr;  // kAlias
};

/// After the step, copy the value of `source` into output slot `output_index`. Used when an
/// output cannot be produced in place: an output that is a parameter or alias, an instruction
/// that is two outputs, or a variable update whose parameter is still read later. For an
/// output aliased to parameter p (Module::aliases) the destination is p's storage. An aliased
/// output whose value is parameter p itself (a variable left unchanged) needs no copy and gets
/// none: p's storage already holds it.
struct OutputCopy {
  const ir::Instruction* source;
  int output_index;
};

struct MemoryPlan {
  /// Entry instructions in execution order (the order liveness was computed for).
  std::vector<const ir::Instruction*> order;
  std::unordered_map<const ir::Instruction*, BufferInfo> buffers;
  /// Copies to run after the last step, in order.
  std::vector<OutputCopy> output_copies;
  int64_t arena_bytes = 0;
  int64_t argument_bytes = 0;
  int64_t output_bytes = 0;  // fresh outputs only (donated outputs reuse argument bytes)
  int64_t constant_bytes = 0;
  /// Why values were or were not donated, computed in place or copied (for KILN_DUMP_IR).
  std::vector<std::string> notes;
  /// What one step needs in all: arena + arguments + fresh outputs + constants.
  int64_t peak_bytes() const { return arena_bytes + argument_bytes + output_bytes + constant_bytes; }

  /// The instruction whose buffer holds `instruction`'s bytes: follows kAlias links.
  const ir::Instruction* storage_owner(const ir::Instruction* instruction) const;
  /// The buffer holding `instruction`'s bytes (its storage owner's BufferInfo).
  const BufferInfo& storage(const ir::Instruction* instruction) const;
};

/// Plans `module`'s entry computation. With `reuse` false every arena value gets its own slot
/// (KILN_NO_MEMORY_PLANNER). Fused instructions' bodies need no buffers of their own.
MemoryPlan plan_memory(const ir::Module& module, const TargetInfo& target, bool reuse = true);

/// The arena (activations, gradients, temporaries) the same step would plan with every f32
/// value in it held in 16 bits, as under a mixed_bfloat16 policy (an estimate: the policy keeps
/// some values, such as the loss and the variables' gradients, in f32). Arguments, outputs and
/// constants are not counted. For the out-of-memory hint.
int64_t arena_bytes_with_16bit_values(const ir::Module& module, const TargetInfo& target);

/// The largest batch size b in [1, max_batch] whose step fits: peak_bytes_for_batch(b) <=
/// limit_bytes; 0 when not even b = 1 fits. `peak_bytes_for_batch` re-traces the step for a
/// batch and returns plan_memory(...).peak_bytes() (only the caller can re-trace: shapes are
/// static in the IR). The peak is close to affine in the batch (weights, their gradients and
/// optimizer slots are fixed; activations scale) but not exactly (alignment, best-fit packing),
/// so the affine fit through `known_batch` and known_batch / 2 only picks the first probe;
/// a binary search over real plans then gives the exact answer, assuming the peak never
/// shrinks as the batch grows. About log2(max_batch) plans at worst, usually 3-4.
int64_t largest_fitting_batch(const std::function<int64_t(int64_t batch)>& peak_bytes_for_batch,
                              int64_t limit_bytes, int64_t known_batch, int64_t max_batch = 1 << 20);

}  // namespace kiln::compiler
