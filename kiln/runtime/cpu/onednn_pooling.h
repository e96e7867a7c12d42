// PoolingKernel: reduce_window (max and mean pooling over H and W of an NHWC tensor) on
// oneDNN's pooling primitive, and its gradient: mean through oneDNN's pooling backward
// (avg_exclude_padding is our mean), max through a loop that sends each window's gradient to
// its first maximum in row-major window order (the reference evaluator's tie rule, which
// oneDNN's workspace does not promise). bf16/f16 operands run on oneDNN's 16-bit pooling where
// the CPU has it, else widened to f32 a tile of the batch at a time; the max gradient loop
// reads and writes 16-bit values itself.
#pragma once

#include <memory>
#include <string>

#include "kiln/ir/instruction.h"

namespace kiln::cpu {

class PoolingImpl;
class WidenScratch;

class PoolingKernel {
 public:
  /// `inst` is reduce_window or reduce_window_grad. Returns nullptr when the window is not a
  /// 2-D pooling over H and W of a floating tensor, when some window lies wholly in padding, or
  /// when oneDNN rejects it (the caller falls back to the reference kernel).
  /// `native_16bit` false runs bf16/f16 operands in f32 even where oneDNN has a 16-bit
  /// kernel (KILN_16BIT_CONTRACTIONS=f32; tests of the widened path). `scratch`: where the f32
  /// path keeps its tiles of the batch (null: its own).
  static std::unique_ptr<PoolingKernel> create(const ir::Instruction& inst, bool native_16bit = true,
                                               std::shared_ptr<WidenScratch> scratch = nullptr);
  /// Whether `inst`'s window is one create() takes, whatever its dtype: it pools only H and W of
  /// a rank-4 tensor, with no negative padding, and every window holds an unpadded element (a
  /// window wholly in padding gives -inf/0 in Kiln, not in oneDNN).
  static bool takes_window(const ir::Instruction& inst);
  ~PoolingKernel();
  PoolingKernel(const PoolingKernel&) = delete;
  PoolingKernel& operator=(const PoolingKernel&) = delete;

  /// `in` are `inst`'s operands in order (x, or x and dy), `out` its result.
  void run(const void* const* in, void* out) const;
  /// "reduce_window(max)", "reduce_window_grad(max, first-max loop)", ... for step dumps.
  const std::string& label() const;

 private:
  explicit PoolingKernel(std::unique_ptr<PoolingImpl> impl);
  std::unique_ptr<PoolingImpl> impl_;
};

}  // namespace kiln::cpu
