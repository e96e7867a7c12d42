// TargetInfo: what a backend tells the compiler (which ops it runs, which fusions it wants,
// how much memory it has). The compiler talks to backends only through this interface, so
// compiler/ never includes runtime/ (docs/style.md 1.3, edit 1).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/compiler/decision.h"
#include "kiln/ir/instruction.h"

namespace kiln::compiler {

class TargetInfo {
 public:
  virtual ~TargetInfo() = default;

  /// Backend name for messages ("cpu", "reference").
  virtual std::string name() const = 0;
  /// Whether the backend can run `instruction` (opcode, dtypes, attributes). A "no" carries
  /// the reason and an alternative the user can take.
  virtual Decision supports(const ir::Instruction& instruction) const = 0;
  /// Bytes of device memory a step may plan for (arena + arguments + outputs).
  virtual int64_t memory_limit_bytes() const = 0;
  /// Buffer alignment in the arena.
  virtual int64_t alignment() const { return 64; }
  /// Fusion kinds the backend has kernels for.
  virtual bool wants_loop_fusion() const { return true; }
  virtual bool wants_reduction_fusion() const { return true; }
  /// Epilogues (bias add, activation) folded into dot_general/convolution calls.
  virtual bool wants_output_fusion() const { return true; }
};

/// A target whose legality check accepts every op, for backends that run every op (the CPU,
/// with reference kernels where it has no fast one) or name what they cannot run when they
/// lower (CUDA).
class AcceptAllTarget : public TargetInfo {
 public:
  AcceptAllTarget(std::string name, int64_t memory_limit, int64_t alignment = 64)
      : name_(std::move(name)), limit_(memory_limit), alignment_(alignment) {}
  std::string name() const override { return name_; }
  Decision supports(const ir::Instruction&) const override { return Decision::yes(); }
  int64_t memory_limit_bytes() const override { return limit_; }
  int64_t alignment() const override { return alignment_; }

 private:
  std::string name_;
  int64_t limit_;
  int64_t alignment_;
};

}  // namespace kiln::compiler
