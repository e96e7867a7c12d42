// CudaBackend: the default pass pipeline, then lowering for one GPU (cuda_lowering_impl.h).
#include "kiln/runtime/cuda/cuda_backend.h"

#include "kiln/compiler/default_pipeline.h"
#include "kiln/core/check.h"
#include "kiln/core/trace_recorder.h"
#include "kiln/runtime/cuda/cuda_device_impl.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"
#include "kiln/runtime/cuda/cuda_executable_impl.h"
#include "kiln/runtime/cuda/cuda_lowering_impl.h"

namespace kiln::cuda {
namespace {

class CudaBackend : public runtime::Backend {
 public:
  explicit CudaBackend(CudaDevice& device) : device_(device), target_("cuda", device.memory_bytes(), 256) {}
  std::string name() const override { return "cuda"; }
  const compiler::TargetInfo& target_info() const override { return target_; }
  runtime::Device& device() override { return device_; }

  std::unique_ptr<runtime::Executable> compile(std::unique_ptr<ir::Module> module,
                                               const runtime::CompileOptions& options) override {
    const std::string label = options.label.empty() ? module->name() : options.label;
    if (options.debug.batch_invariant.value_or(options.batch_invariant))
      KILN_THROW(CompileError, "[", label, "] batch-invariant kernels are not built for the CUDA backend (cuBLASLt and "
                 "cuDNN choose their algorithms by shape). Hint: predict with {.batch_invariant = false}, or unset "
                 "KILN_BATCH_INVARIANT.");
    TraceScope scope("compile", "compile", label);
    compiler::check_and_optimize(*module, target_, options.debug, options.label);
    auto exe = std::make_unique<CudaExecutable>(std::move(module), &device_);
    lower(*exe, device_, options);
    return exe;
  }

 private:
  CudaDevice& device_;
  compiler::AcceptAllTarget target_;  // lowering names each op without a GPU kernel
};

}  // namespace

std::unique_ptr<runtime::Backend> make_cuda_backend(int ordinal) {
  return std::make_unique<CudaBackend>(cuda_device(ordinal));
}

runtime::GpuSurvey survey_gpus() {
  const Driver& d = driver();
  int count = 0;
  check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  runtime::GpuSurvey survey;
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    check(d.cuDeviceGet(&dev, i), "cuDeviceGet");
    char name[256] = {};
    check(d.cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
    size_t bytes = 0;
    check(d.cuDeviceTotalMem(&bytes, dev), "cuDeviceTotalMem");
    int major = 0, minor = 0;
    check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
    check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
    survey.gpus.push_back({str_cat("cuda:", i), name, static_cast<int64_t>(bytes), major * 10 + minor});
  }
  if (count == 0) survey.none_because = str_cat("[cuda] no CUDA device: the driver (version ", d.version, ") reports none");
  return survey;
}

}  // namespace kiln::cuda
