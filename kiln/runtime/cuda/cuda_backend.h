// The CUDA backend: programs compiled for one GPU (cuda:N). Fused loops become PTX kernels from
// the code generator (LLVM's NVPTX target, loaded with cuModuleLoadData), matmuls run on
// cuBLASLt with their bias/relu epilogues, convolutions and pooling on cuDNN; any other op is a
// CompileError naming it.
#pragma once

#include <memory>

#include "kiln/runtime/backend.h"
#include "kiln/runtime/gpus.h"

namespace kiln::cuda {

/// A backend for GPU `ordinal`. ConfigError when there is no driver or no such GPU.
std::unique_ptr<runtime::Backend> make_cuda_backend(int ordinal = 0);
/// The cuda backend's lowering without a GPU, over a module the compiler's passes have run on
/// (an Executable's lowered_module()): the CompileError compile() would throw for ops without
/// a GPU kernel, or the PTX module the program would load on a GPU of `compute_capability`.
/// Lets machines without a GPU check coverage and the generated code.
std::string lower_to_ptx(const ir::Module& optimized, int compute_capability, const runtime::CompileOptions& options = {});
/// What lower_without_gpu made: the PTX module and the program's steps (describe(), with a
/// while's or conditional's nested step lists indented under it).
struct GpuLowering {
  std::string ptx;
  std::string steps;
  /// What one run holds: the workspace, the arena of the values the steps compute (packed by
  /// lifetime) and the outputs' own buffers (Executable::planned_peak_bytes()).
  int64_t peak_bytes = 0;
};
/// lower_to_ptx with the steps too.
GpuLowering lower_without_gpu(const ir::Module& optimized, int compute_capability,
                              const runtime::CompileOptions& options = {});
/// cuDNN's version as loaded ("9.19.0"); ConfigError "[cuda] cannot load cuDNN ..." when
/// libcudnn.so.9 is missing. Needs no GPU.
std::string cudnn_version();
/// The GPUs the driver reports; ConfigError "[cuda] no CUDA driver ..." or "no CUDA device ...".
runtime::GpuSurvey survey_gpus();

}  // namespace kiln::cuda
