// The code generator's back half: LoopIr -> machine code with LLVM (Debian's llvm-15), for the
// host CPU (an object file the CPU runtime loads with ORC) and for NVPTX (PTX text the CUDA
// driver loads). No LLVM type appears here, so the runtime layers stay free of LLVM headers
// except where they load code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/compiler/codegen/gpu_index_kernels.h"
#include "kiln/compiler/codegen/loop_ir.h"

namespace kiln::codegen {

/// What code is generated for: an LLVM target triple, CPU name and feature string.
struct CodegenTarget {
  std::string triple;
  std::string cpu;
  std::string features;

  /// The host: LLVM's detection of this CPU's name and features (AVX2, AVX-512, ... as the
  /// CPU and OS support them, not as Kiln was compiled).
  static CodegenTarget host();
  /// NVPTX PTX for a GPU of compute capability `compute_capability` (90 for an H100/H200):
  /// the newest sm_XX LLVM knows that is not newer than it (LLVM 15: sm_86, PTX 7.5).
  static CodegenTarget nvptx(int compute_capability);
  /// Everything that makes generated code differ: Kiln's version and its code generator's
  /// sources (a hash), LLVM's version and the target.
  std::string cache_tag() const;
};

/// A generated CPU stage function: computes the stage's row-major elements [begin, end) and
/// stores result k at outs[k][i] (LoopResult::dtype); srcs[k] is where the stage's load k
/// reads (before LoopLoad::offset, which the code applies).
using CpuStageFn = void (*)(const void* const* srcs, void* const* outs, int64_t begin, int64_t end);
/// The generated read function: the last stage's elements [begin, end) in the register type
/// (float, or double when LoopIr::use_double) into dst[i - begin].
using CpuReadFn = void (*)(const void* const* srcs, void* dst, int64_t begin, int64_t end);

/// The symbols of `ir`'s functions compiled with `prefix`: stage s, and the read function.
std::string stage_symbol(const std::string& prefix, size_t stage);
std::string read_symbol(const std::string& prefix);

/// LLVM's version, e.g. "15.0.6".
std::string llvm_version();

struct GeneratedCode {
  std::string binary;    // the object file (CPU) or PTX text (NVPTX)
  std::string ir_text;   // the optimized LLVM IR, when asked for
  std::string asm_text;  // the assembly, when asked for (the PTX itself for NVPTX)
};

/// One kernel to generate: `ir`'s functions, named from `prefix` (stage_symbol, read_symbol).
struct LoopUnit {
  const LoopIr* ir = nullptr;
  std::string prefix;
  /// false: a CpuStageFn per stage (NVPTX: a kernel per stage). true: the last stage as a
  /// CpuReadFn instead (a reduction's fused producer), the inner stages as CpuStageFns.
  bool read = false;
};

enum class GpuKernelOp { kSum, kMax, kMin, kArgmax, kRngBits };

/// How a reduction kernel spreads [outer, r, inner] over GPU threads (the launch must match).
enum class GpuReduction {
  /// thread t < outer * inner folds its r elements in order (1-D blocks, any size)
  kThreadPerResult,
  /// one 1-D block (a multiple of 32 threads, at most 1024) per result, results ctaid.x,
  /// ctaid.x + nctaid.x, ...: its threads fold strided parts of the row, then shuffles and
  /// shared memory combine them
  kBlockPerResult,
  /// blocks of 32 x Y threads (Y <= 32), one per (outer row, tile of 32 inner elements),
  /// ceil(inner / 32) * outer blocks: consecutive threads read consecutive inner elements and
  /// the Y rows of threads split r
  kColumnTiles,
};

/// A GPU kernel besides the fused loops, named `name` (NVPTX only):
/// - kSum, kMax, kMin, kArgmax: `void(ptr src, ptr dst, i64 outer, i64 r, i64 inner)`, src
///   (`input`) viewed as [outer, r, inner] (row-major) and dst (`output`; i32 for kArgmax) as
///   [outer, inner], laid out over threads as `layout` says;
/// - kRngBits: `void(ptr key, ptr dst, i64 n)`, key an i64 scalar: dst[i] =
///   philox_element_bits(*key, i) as i32 (kiln/core/rng.h), the CPU's and the reference's bits.
struct GpuKernelUnit {
  std::string name;
  GpuKernelOp op = GpuKernelOp::kSum;
  DType input = DType::kF32, output = DType::kF32;
  GpuReduction layout = GpuReduction::kThreadPerResult;
};

/// Compiles the units into one object (CPU) or one PTX module, so LLVM's fixed costs are paid
/// once per program, not per kernel. `with_text` also returns the IR and assembly
/// (KILN_DUMP_IR). Throws CompileError when LLVM cannot compile for the target. For NVPTX,
/// `libdevice` is the path of CUDA's libdevice bitcode, linked in for the math functions.
/// `gpu_kernels` (NVPTX only) and `index_kernels` join the same module (for the host, each
/// index kernel as its CpuIndexFn, for tests).
GeneratedCode generate_loop_code(const std::vector<LoopUnit>& units, const CodegenTarget& target, bool with_text,
                                 const std::string& libdevice = "", const std::vector<GpuKernelUnit>& gpu_kernels = {},
                                 const std::vector<IndexKernelUnit>& index_kernels = {});

}  // namespace kiln::codegen
