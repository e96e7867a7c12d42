// Matmuls (dot_general without batch dims) through cuBLASLt, with the bias and relu epilogues
// the output-fusion pass forms. libcublasLt is opened with dlopen on first use, like the driver.
#pragma once

#include <cuda.h>

#include <memory>
#include <optional>
#include <string>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/ir/instruction.h"

namespace kiln::cuda {

/// out[m, n] = op(lhs) . op(rhs) (+ bias[n]) (relu), row-major.
struct MatmulGeometry {
  int64_t m = 0, n = 0, k = 0;
  bool lhs_transposed = false;  // lhs is [k, m] (contracting dim 0)
  bool rhs_transposed = false;  // rhs is [n, k] (contracting dim 1)
  DType input = DType::kF32, output = DType::kF32;
  bool bias = false;
  bool relu = false;

  /// The geometry of a rank-2 dot_general without batch dims, in f32, bf16 or f16; nullopt
  /// otherwise (the caller reports the op as not lowered).
  static std::optional<MatmulGeometry> of(const ir::Instruction& dot);
  /// "matmul(cublasLt, 128x10x784, bf16, +bias+relu)"
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
