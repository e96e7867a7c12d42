#include "kiln/runtime/cuda/cuda_device_impl.h"

#include <cstring>
#include <map>
#include <mutex>

#include "kiln/core/check.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"
#include "kiln/runtime/cuda/cuda_executable_impl.h"

namespace kiln::cuda {
namespace {

struct Gpu {
  CUdevice device = 0;
  CUcontext context = nullptr;
};

Gpu open_gpu(int ordinal) {
  const Driver& d = driver();
  int count = 0;
  check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    KILN_THROW(ConfigError, "[cuda] no device cuda:", ordinal, ": this machine has ", count, " GPU", count == 1 ? "" : "s", ".");
  Gpu g;
  check(d.cuDeviceGet(&g.device, ordinal), "cuDeviceGet");
  check(d.cuDevicePrimaryCtxRetain(&g.context, g.device), "cuDevicePrimaryCtxRetain");
  return g;
}

// cuMemAlloc in `context`; null when the GPU is out of memory (the caching allocator then
// empties its cache and retries, or reports OutOfMemoryError).
class DeviceMemory final : public runtime::MemoryResource {
 public:
  explicit DeviceMemory(CUcontext context) : context_(context) {}
  void* allocate(int64_t bytes) override {
    check(driver().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    CUdeviceptr p = 0;
    const CUresult r = driver().cuMemAlloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(r, "cuMemAlloc");
    return reinterpret_cast<void*>(p);
  }
  void deallocate(void* p, int64_t) override {
    driver().cuCtxSetCurrent(context_);
    driver().cuMemFree(reinterpret_cast<CUdeviceptr>(p));  // at exit the driver may be gone: ignored
  }

 private:
  CUcontext context_;
};

std::unique_ptr<runtime::CachingAllocator> device_allocator(int ordinal) {
  const Gpu g = open_gpu(ordinal);
  size_t total = 0;
  check(driver().cuDeviceTotalMem(&total, g.device), "cuDeviceTotalMem");
  return std::make_unique<runtime::CachingAllocator>(str_cat("cuda:", ordinal), std::make_unique<DeviceMemory>(g.context),
                                                     static_cast<int64_t>(total));
}

}  // namespace

// Page-locked host memory a copy passes through (the DMA engines read and write it directly),
// grown to the largest copy so far.
struct CudaDevice::Staging {
  void* memory = nullptr;
  size_t bytes = 0;
  std::byte* reserve(size_t n) {
    if (n > bytes) {
      if (memory != nullptr) driver().cuMemFreeHost(memory);
      memory = nullptr;
      check(driver().cuMemHostAlloc(&memory, n, 0), "cuMemHostAlloc (pinned staging)");
      bytes = n;
    }
    return static_cast<std::byte*>(memory);
  }
};

CudaDevice::CudaDevice(int ordinal)
    : Device(str_cat("cuda:", ordinal), device_allocator(ordinal), /*asynchronous_streams=*/true), ordinal_(ordinal),
      staging_(std::make_shared<Staging>()) {
  const Driver& d = driver();
  const Gpu g = open_gpu(ordinal);
  cu_device_ = g.device;
  context_ = g.context;
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof name, cu_device_), "cuDeviceGetName");
  model_ = name;
  int major = 0, minor = 0;
  check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu_device_), "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu_device_), "cuDeviceGetAttribute");
  compute_capability_ = major * 10 + minor;
  make_current();
  check(d.cuStreamCreate(&transfer_cu_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(d.cuStreamCreate(&compute_cu_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

void CudaDevice::make_current() const { check(driver().cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

void CudaDevice::wait_cu_stream(CUstream stream) const {
  const Driver& d = driver();
  CUevent done = nullptr;
  check(d.cuEventCreate(&done, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC), "cuEventCreate");
  CUresult r = d.cuEventRecord(done, stream);
  if (r == CUDA_SUCCESS) r = d.cuEventSynchronize(done);
  d.cuEventDestroy(done);
  check(r, "waiting for a CUDA stream");
}

runtime::Buffer CudaDevice::to_device(const HostTensor& host) {
  runtime::Buffer b = allocate(host.shape());
  // The copy holds the block (not just its address): a Buffer dropped before the copy ran must
  // not hand the memory back to the cache while the DMA still writes it.
  runtime::Event done = transfer_->enqueue([this, memory = b.memory(), host] {
    make_current();
    std::byte* dst = memory.get();
    const size_t n = static_cast<size_t>(host.byte_size());
    if (n == 0) return;
    std::byte* pinned = staging_->reserve(n);
    std::memcpy(pinned, host.raw_data(), n);
    check(driver().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), pinned, n, transfer_cu_), "cuMemcpyHtoDAsync");
    wait_cu_stream(transfer_cu_);  // the staging memory is reused by the next copy
  });
  return runtime::Buffer(this, b.shape(), b.memory(), done);
}

HostTensor CudaDevice::to_host(const runtime::Buffer& buffer) {
  check_owned(buffer, "to_host");
  buffer.ready().wait();
  HostTensor out = HostTensor::uninitialized(buffer.shape());
  transfer_->enqueue([this, &buffer, &out] {
    make_current();
    const size_t n = static_cast<size_t>(out.byte_size());
    if (n == 0) return;
    std::byte* pinned = staging_->reserve(n);
    check(driver().cuMemcpyDtoHAsync(pinned, reinterpret_cast<CUdeviceptr>(buffer.device_address()), n, transfer_cu_),
          "cuMemcpyDtoHAsync");
    wait_cu_stream(transfer_cu_);
    std::memcpy(out.raw_data(), pinned, n);
  }).wait();
  return out;
}

std::vector<runtime::Buffer> CudaDevice::execute(runtime::Executable& program, std::span<const runtime::Buffer> arguments) {
  auto* exe = dynamic_cast<CudaExecutable*>(&program);
  if (exe == nullptr)
    KILN_THROW(ValueError, "[", name_, " execute] the program was not compiled by the cuda backend. Hint: compile it with "
               "runtime::make_backend(\"cuda\").");
  for (const runtime::Buffer& a : arguments) check_owned(a, "execute");
  for (const runtime::Buffer& a : arguments) a.ready().wait();
  return exe->execute(*this, arguments);
}

CudaDevice& cuda_device(int ordinal) {
  static std::mutex mutex;
  static auto* devices = new std::map<int, CudaDevice*>();
  std::lock_guard lock(mutex);
  CudaDevice*& d = (*devices)[ordinal];
  if (d == nullptr) d = new CudaDevice(ordinal);
  return *d;
}

}  // namespace kiln::cuda
