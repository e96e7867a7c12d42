// Matmuls (dot_general: plain, transposed, batched, matrix-vector) through cuBLASLt, with the
// bias and relu epilogues the output-fusion pass forms. libcublasLt is opened with dlopen on first use, like the driver.
#pragma once

#include <cuda.h>

#include <memory>
#include <optional>
#include <string>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/ir/instruction.h"

namespace kiln::cuda {

/// out[b, m, n] = op(lhs[b]) . op(rhs[b]) (+ bias[n]) (relu), row-major, for each of `batch`
/// matrices stored one after another.
struct MatmulGeometry {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool lhs_transposed = false;  // lhs is [k, m] (contracting dim 0)
  bool rhs_transposed = false;  // rhs is [n, k] (contracting dim 1)
  DType input = DType::kF32, output = DType::kF32;
  bool bias = false;
  bool relu = false;

  /// The geometry of a dot_general cuBLASLt runs: f32, bf16, f16 or f64 operands of one
  /// dtype; batch dims (if any) leading and in the same order on both operands; after them,
  /// each operand's contracting dims one run (in order) at the start or the end, its free dims
  /// the rest (each group collapsed to one dim: none is 1, a vector). Otherwise nullopt, with
  /// the reason in `why`.
  static std::optional<MatmulGeometry> of(const ir::Instruction& dot, std::string& why);
  /// "matmul(cublasLt, 128x10x784, bf16, +bias+relu)", "matmul(cublasLt, 8 x 16x16x32, f32)"
  std::string label() const;
};

class CublasLtMatmul {
 public:
  /// Workspace cuBLASLt may use: the caller passes this many bytes of device memory to run().
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

  /// Chooses cuBLASLt's algorithm for `g` (on the GPU whose context is current on this
  /// thread). ConfigError when libcublasLt cannot be loaded, CompileError when cuBLASLt
  /// has no algorithm for the geometry.
  explicit CublasLtMatmul(const MatmulGeometry& g);
  ~CublasLtMatmul();
  CublasLtMatmul(const CublasLtMatmul&) = delete;
  CublasLtMatmul& operator=(const CublasLtMatmul&) = delete;

  void run(CUstream stream, CUdeviceptr lhs, CUdeviceptr rhs, CUdeviceptr bias, CUdeviceptr out,
           CUdeviceptr workspace) const;

 private:
  struct State;
  MatmulGeometry g_;
  std::unique_ptr<State> s_;
};

}  // namespace kiln::cuda
