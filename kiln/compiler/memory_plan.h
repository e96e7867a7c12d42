// MemoryPlan: where every value of the entry computation lives during a step: one arena with
// liveness-based offsets and in-place reuse, the caller's argument buffers (donated when a
// variable is updated), fresh output tensors, and constants. The backend lowers against it,
// and its peak is known before anything runs (seed S25).
#pragma once

#include <cstdint>
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
/// that is two outputs, or a variable update whose parameter is still read later.
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
  /// What one step needs in all: arena + arguments + fresh outputs + constants.
  int64_t peak_bytes() const { return arena_bytes + argument_bytes + output_bytes + constant_bytes; }
};

/// Plans `module`'s entry computation. With `reuse` false every arena value gets its own slot
/// (KILN_NO_MEMORY_PLANNER). Fused instructions' bodies need no buffers of their own.
MemoryPlan plan_memory(const ir::Module& module, const TargetInfo& target, bool reuse = true);

}  // namespace kiln::compiler
