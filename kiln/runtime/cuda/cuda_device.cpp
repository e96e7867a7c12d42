#include "kiln/runtime/cuda/cuda_device_impl.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

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

// Page-locked host memory for the staging ring (the DMA engines read and write it directly).
class PinnedMemory final : public runtime::MemoryResource {
 public:
  explicit PinnedMemory(CUcontext context) : context_(context) {}
  void* allocate(int64_t bytes) override {
    check(driver().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    void* p = nullptr;
    const CUresult r = driver().cuMemHostAlloc(&p, static_cast<size_t>(bytes), 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(r, "cuMemHostAlloc (pinned staging)");
    return p;
  }
  void deallocate(void* p, int64_t) override { driver().cuMemFreeHost(p); }

 private:
  CUcontext context_;
};

// A CUDA host function queued after a copy: completes the copy's ready event for host waiters.
// It only signals a condition variable (CUDA calls are not allowed here).
void CUDA_CB complete_event(void* event) {
  const std::unique_ptr<runtime::Event> e(static_cast<runtime::Event*>(event));
  e->complete();
}

}  // namespace

// CUevents recorded after copies, handed out as their ready events' markers. A marker going
// away returns its CUevent here instead of destroying it: the last reference may be dropped
// where CUDA calls are not allowed (Event::complete from complete_event), and a training loop
// reuses the same few events every step.
class CudaDevice::EventPool : public std::enable_shared_from_this<EventPool> {
 public:
  struct Marker final : runtime::DeviceMarker {
    Marker(CUevent e, std::shared_ptr<EventPool> p, std::string w) : event(e), pool(std::move(p)), what(std::move(w)) {}
    ~Marker() override { pool->give_back(event); }
    CUevent event;
    std::shared_ptr<EventPool> pool;
    std::string what;  // the work it follows, for errors
  };

  /// A CUevent recorded on `stream` now, after the work `what`, as a marker.
  std::shared_ptr<const Marker> record(CUstream stream, const std::string& what) {
    CUevent e = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        e = free_.back();
        free_.pop_back();
      }
    }
    if (e == nullptr) check(driver().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    auto marker = std::make_shared<const Marker>(e, shared_from_this(), what);
    check(driver().cuEventRecord(e, stream), "cuEventRecord");
    return marker;
  }

 private:
  void give_back(CUevent e) {
    std::lock_guard lock(mutex_);
    free_.push_back(e);
  }
  std::mutex mutex_;
  std::vector<CUevent> free_;
};

CudaDevice::CudaDevice(int ordinal)
    : Device(str_cat("cuda:", ordinal), device_allocator(ordinal), /*asynchronous_streams=*/true), ordinal_(ordinal),
      events_(std::make_shared<EventPool>()) {
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
  staging_ = std::make_shared<runtime::StagingRing>(std::make_unique<PinnedMemory>(context_), kStagingSlots);
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

void CudaDevice::stream_wait_ready(CUstream stream, const runtime::Buffer& buffer) const {
  const std::shared_ptr<const runtime::DeviceMarker> marker = buffer.ready().wait_issued();
  if (marker == nullptr) return;  // done
  if (const auto* cu = dynamic_cast<const EventPool::Marker*>(marker.get())) {
    check(driver().cuStreamWaitEvent(stream, cu->event, 0), "cuStreamWaitEvent");
    return;
  }
  buffer.ready().wait();  // not a CUevent: only the host can wait for it
}

runtime::Buffer CudaDevice::to_device(const HostTensor& host) {
  runtime::Buffer b = allocate(host.shape());
  runtime::Event ready = runtime::Event::pending();
  // The work item issues the copy and returns; `ready` completes once the GPU has run it.
  transfer_->enqueue([this, memory = b.memory(), host, ready] {
    try {
      issue_upload(memory, host, ready);
    } catch (...) {
      ready.fail(std::current_exception());
      throw;
    }
  });
  return runtime::Buffer(this, b.shape(), b.memory(), ready);
}

void CudaDevice::issue_upload(std::shared_ptr<std::byte> memory, const HostTensor& host, const runtime::Event& ready) {
  const Driver& d = driver();
  make_current();
  const size_t n = static_cast<size_t>(host.byte_size());
  if (n == 0) return ready.complete();
  // Waits only if this slot's copy of `kStagingSlots` copies ago is still running.
  const runtime::StagingRing::Slot slot = staging_->acquire(static_cast<int64_t>(n));
  std::memcpy(slot.data, host.raw_data(), n);
  const CUresult copied = d.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(memory.get()), slot.data, n, transfer_cu_);
  // The slot and the destination (even if its Buffer is dropped meanwhile) stay in use until
  // the copy finished: `ready` completes after it, or fails if what follows cannot be queued.
  staging_->release(slot, copied == CUDA_SUCCESS ? ready : runtime::Event(), std::move(memory));
  check(copied, "cuMemcpyHtoDAsync");
  issue_and_complete(ready, transfer_cu_, str_cat("the copy of ", host.shape(), " to ", name_));
}

void CudaDevice::issue_and_complete(const runtime::Event& ready, CUstream stream, const std::string& label) {
  ready.issue(events_->record(stream, label));
  auto* done = new runtime::Event(ready);
  if (const CUresult r = driver().cuLaunchHostFunc(stream, complete_event, done); r != CUDA_SUCCESS) {
    delete done;
    check(r, "cuLaunchHostFunc (work done)");
  }
}

runtime::Buffer CudaDevice::allocate_for_compute(const Shape& shape) {
  return runtime::Buffer(this, shape, allocator_->allocate(shape.byte_size(), kComputeOrder), runtime::Event());
}

runtime::Event CudaDevice::record_compute_done(const std::string& label) {
  runtime::Event done = runtime::Event::pending();
  issue_and_complete(done, compute_cu_, label);
  return done;
}

void CudaDevice::record_compute_use(const runtime::Buffer& buffer, const runtime::Event& done) {
  if (buffer.memory() != nullptr) allocator_->record_use(buffer.memory(), kComputeOrder, done);
}

void CudaDevice::wait_on_host(const runtime::Event& event) const {
  const std::shared_ptr<const runtime::DeviceMarker> marker = event.wait_issued();  // rethrows a failed issue
  const auto* cu = dynamic_cast<const EventPool::Marker*>(marker.get());
  if (cu == nullptr) return event.wait();  // done, or not GPU work
  // Not event.wait(): the host function that completes it does not run after a GPU error.
  if (const CUresult r = driver().cuEventSynchronize(cu->event); r != CUDA_SUCCESS)
    KILN_THROW(InternalError, "[", name_, "] ", cu->what, " failed on the GPU: ", error_text(r),
               ". (GPU work reports its errors at the next wait for it: this one.)");
}

HostTensor CudaDevice::to_host(const runtime::Buffer& buffer) {
  check_owned(buffer, "to_host");
  wait_on_host(buffer.ready());
  HostTensor out = HostTensor::uninitialized(buffer.shape());
  transfer_->enqueue([this, &buffer, &out] {
    make_current();
    const size_t n = static_cast<size_t>(out.byte_size());
    if (n == 0) return;
    // After every program queued so far, also where `buffer` is a handle whose ready event
    // predates a program writing it in place (a variable's argument buffer).
    check(driver().cuStreamWaitEvent(transfer_cu_, events_->record(compute_cu_, "compute work")->event, 0),
          "cuStreamWaitEvent (to_host after the compute stream)");
    const runtime::StagingRing::Slot slot = staging_->acquire(static_cast<int64_t>(n));
    try {
      check(driver().cuMemcpyDtoHAsync(slot.data, reinterpret_cast<CUdeviceptr>(buffer.device_address()), n, transfer_cu_),
            "cuMemcpyDtoHAsync");
      wait_cu_stream(transfer_cu_);
      std::memcpy(out.raw_data(), slot.data, n);
    } catch (...) {
      staging_->release(slot, runtime::Event());
      throw;
    }
    staging_->release(slot, runtime::Event());  // the host waited for the copy
  }).wait();
  return out;
}

std::vector<runtime::Buffer> CudaDevice::execute(runtime::Executable& program, std::span<const runtime::Buffer> arguments) {
  auto* exe = dynamic_cast<CudaExecutable*>(&program);
  if (exe == nullptr)
    KILN_THROW(ValueError, "[", name_, " execute] the program was not compiled by the cuda backend. Hint: compile it with "
               "runtime::make_backend(\"cuda\").");
  for (const runtime::Buffer& a : arguments) check_owned(a, "execute");
  // Inputs still being copied (prefetch_to_device's next batch) are waited for by the compute
  // stream on the GPU, not by this thread.
  make_current();
  for (const runtime::Buffer& a : arguments) stream_wait_ready(compute_cu_, a);
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
