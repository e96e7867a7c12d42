// Convolutions (forward, backward data, backward filter) and max/mean pooling (forward and
// backward) through cuDNN's convolution and pooling API over NHWC tensors. libcudnn.so.9 is
// opened with dlopen on first use, like cuBLASLt, so binaries start without it. cuDNN's NHWC
// filters are KRSC (out, h, w, in): the lowering transposes Kiln's HWIO filters around the
// calls with generated loop kernels.
#pragma once

#include <cuda.h>

#include <memory>
#include <optional>
#include <string>

#include "kiln/ir/instruction.h"

namespace kiln::cuda {

/// A convolution op in forward terms: x (N, H, W, C) and y (N, OH, OW, F) NHWC, w HWIO
/// (KH, KW, C/groups, F), whichever are the op's operands and result.
///
/// cuDNN pads both sides of a dimension alike. Padding with more on one side ('same' with an
/// even kernel, TensorFlow's extra row at the bottom) is split: the part both sides share stays
/// in `dims` for cuDNN, the rest (`explicit_low`/`explicit_high`, per spatial dim) is written
/// into a padded copy of x (a memset and a 3D copy) before the call, and a data gradient computed for
/// that padded x is sliced back to the op's x after it. `x` is then the padded tensor cuDNN
/// sees and `op_x` the op's own.
struct ConvGeometry {
  ir::Opcode op = ir::Opcode::kConvolution;  // or kConvBackwardInput, kConvBackwardFilter
  Dims x, w, y;
  ir::ConvDims dims;
  DType dtype = DType::kF32;
  Dims op_x;
  Dims explicit_low{0, 0}, explicit_high{0, 0};

  /// The geometry of convolution / conv_backward_input / conv_backward_filter; nullopt with
  /// `why` set where cuDNN's convolution API cannot run it (dtype, negative padding, ...).
  static std::optional<ConvGeometry> of(const ir::Instruction& conv, std::string& why);
  /// Whether x is padded by a kernel before the call (asymmetric padding).
  bool padded_explicitly() const { return x != op_x; }
  /// "convolution(cudnn, x f32[128,28,28,1], w f32[3,3,1,32])"
  std::string label() const;
  /// y's dims as cuDNN computes them from the descriptors the calls use (no GPU needed): `y`
  /// where the descriptors say what Kiln means. ConfigError without libcudnn.
  Dims cudnn_output_dims() const;
};

class CudnnConvolution {
 public:
  /// Workspace an algorithm may use at most; cuDNN's heuristics pick among those within it.
  static constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;

  /// Chooses the algorithm (cuDNN's heuristics, cached per geometry and GPU) on GPU `ordinal`,
  /// whose context is current on this thread. ConfigError when libcudnn cannot be loaded,
  /// CompileError when cuDNN has no algorithm for the geometry.
  CudnnConvolution(const ConvGeometry& g, int ordinal);
  ~CudnnConvolution();
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;

  /// Device memory run() needs at `workspace`.
  size_t workspace_bytes() const;
  /// "algo 1"
  std::string algorithm() const;
  /// Forward: (x, w KRSC) -> y; backward input: (dy, w KRSC) -> dx; backward filter:
  /// (x, dy) -> dw KRSC. Queued on `stream`.
  void run(CUstream stream, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out, CUdeviceptr workspace) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// reduce_window / reduce_window_grad pooling H and W of NHWC tensors. Max pooling with more
/// padding on one side is split as a convolution's is (ConvGeometry): the excess is a -inf pad
/// of x before the call, `x` the padded tensor, `op_x` the op's, a gradient sliced back. Mean
/// pooling cannot: its divisor excludes cuDNN's own padding only.
struct PoolGeometry {
  Dims x, y;
  ir::Window window;
  ir::ReduceKind kind = ir::ReduceKind::kMax;
  DType dtype = DType::kF32;
  Dims op_x;
  Dims explicit_low{0, 0, 0, 0}, explicit_high{0, 0, 0, 0};  // NHWC; H and W only

  /// nullopt with `why` set where cuDNN's pooling cannot run the op (a window over N or C,
  /// asymmetric padding of mean pooling, a window wholly in padding, ...).
  static std::optional<PoolGeometry> of(const ir::Instruction& pool, std::string& why);
  bool padded_explicitly() const { return x != op_x; }
  /// "max_pool(cudnn, 2x2 stride 2x2 pad 0x0, f32)"
  std::string label() const;
  /// y's dims as cuDNN computes them from the pooling's descriptors (no GPU needed).
  Dims cudnn_output_dims() const;
};

class CudnnPooling {
 public:
  /// On GPU `ordinal`, whose context is current. ConfigError when libcudnn cannot be loaded.
  CudnnPooling(const PoolGeometry& g, int ordinal);
  ~CudnnPooling();
  CudnnPooling(const CudnnPooling&) = delete;
  CudnnPooling& operator=(const CudnnPooling&) = delete;

  void forward(CUstream stream, CUdeviceptr x, CUdeviceptr y) const;
  /// dx from the forward's x and y and dy: max sends each dy to its window's maximum, mean
  /// spreads it over the window's unpadded elements.
  void backward(CUstream stream, CUdeviceptr x, CUdeviceptr y, CUdeviceptr dy, CUdeviceptr dx) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace kiln::cuda
