#include "kiln/runtime/host_device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>

#include "kiln/core/check.h"
#include "kiln/runtime/executable.h"

namespace kiln::runtime {
namespace {

class HostMemory final : public MemoryResource {
 public:
  void* allocate(int64_t bytes) override { return std::aligned_alloc(64, static_cast<size_t>(bytes)); }
  void deallocate(void* p, int64_t) override { std::free(p); }
};

std::shared_ptr<std::byte> memory_of(const HostTensor& t) {
  return std::shared_ptr<std::byte>(t.storage(), static_cast<std::byte*>(const_cast<void*>(t.raw_data())));
}

// Runs a host program over views of the arguments' memory. An output sharing an argument's
// memory is that argument's buffer (donated, updated in place); `adopt` places the others.
template <typename Adopt>
std::vector<Buffer> run_over_views(Executable& program, std::span<const Buffer> arguments, Adopt adopt) {
  std::vector<HostTensor> views;
  views.reserve(arguments.size());
  for (const Buffer& a : arguments) views.push_back(HostTensor::from_storage(a.shape(), a.memory()));
  std::vector<HostTensor> results = program.run(views);
  std::vector<Buffer> out;
  out.reserve(results.size());
  for (HostTensor& r : results) {
    size_t i = 0;
    while (i < views.size() && r.raw_data() != views[i].raw_data()) ++i;
    out.push_back(i < views.size() ? arguments[i] : adopt(std::move(r)));
  }
  return out;
}

void wait_ready(std::span<const Buffer> buffers) {
  for (const Buffer& b : buffers) b.ready().wait();
}

}  // namespace

int64_t host_memory_bytes() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

HostDevice::HostDevice(std::string name, int64_t memory_bytes)
    : Device(name, std::make_unique<CachingAllocator>(name, std::make_unique<HostMemory>(), memory_bytes > 0 ? memory_bytes : host_memory_bytes()),
             /*asynchronous_streams=*/false) {}

Buffer HostDevice::to_device(const HostTensor& host) { return Buffer(this, host.shape(), memory_of(host), {}); }

std::vector<Buffer> HostDevice::execute(Executable& program, std::span<const Buffer> arguments) {
  for (const Buffer& a : arguments) check_owned(a, "execute");
  wait_ready(arguments);
  return run_over_views(program, arguments,
                        [this](HostTensor r) { return Buffer(this, r.shape(), memory_of(r), {}); });
}

// Address space reserved with no access; buffers are carved first-fit from it. While a device
// operation holds it open (a count, as operations on two streams may overlap) the used range
// is readable and writable; otherwise any host access faults.
class GuardedArena final : public MemoryResource {
 public:
  explicit GuardedArena(int64_t bytes) : size_(bytes) {
    void* p = mmap(nullptr, static_cast<size_t>(bytes), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      KILN_THROW(OutOfMemoryError, "[guarded_cpu] cannot reserve ", bytes, " bytes of address space: ",
                 std::strerror(errno), ".");
    base_ = static_cast<std::byte*>(p);
  }
  ~GuardedArena() override { munmap(base_, static_cast<size_t>(size_)); }

  void* allocate(int64_t bytes) override {
    std::lock_guard lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < bytes) continue;
      const int64_t offset = it->first, left = it->second - bytes;
      free_.erase(it);
      if (left > 0) free_.emplace(offset + bytes, left);
      return base_ + offset;
    }
    if (end_ + bytes > size_) return nullptr;
    std::byte* p = base_ + end_;
    end_ += bytes;
    if (open_ > 0) protect(base_, end_, PROT_READ | PROT_WRITE);  // mprotect needs page-aligned starts
    return p;
  }
  void deallocate(void* p, int64_t bytes) override {
    std::lock_guard lock(mutex_);
    free_.emplace(static_cast<std::byte*>(p) - base_, bytes);  // not coalesced: sizes are size classes
  }

  void open() {
    std::lock_guard lock(mutex_);
    if (open_++ == 0) protect(base_, end_, PROT_READ | PROT_WRITE);
  }
  void close() {
    std::lock_guard lock(mutex_);
    if (--open_ == 0) protect(base_, end_, PROT_NONE);
  }
  bool is_open() const {
    std::lock_guard lock(mutex_);
    return open_ > 0;
  }

 private:
  static void protect(std::byte* p, int64_t bytes, int prot) {
    if (bytes > 0 && mprotect(p, static_cast<size_t>(bytes), prot) != 0)
      KILN_THROW(InternalError, "[guarded_cpu] mprotect failed: ", std::strerror(errno), ".");
  }

  std::byte* base_ = nullptr;
  int64_t size_;
  int64_t end_ = 0;
  int open_ = 0;
  std::map<int64_t, int64_t> free_;  // offset -> bytes
  mutable std::mutex mutex_;
};

namespace {

std::unique_ptr<CachingAllocator> guarded_allocator(const std::string& name, int64_t bytes, GuardedArena*& arena) {
  auto resource = std::make_unique<GuardedArena>(bytes);
  arena = resource.get();
  return std::make_unique<CachingAllocator>(name, std::move(resource), bytes);
}

}  // namespace

Device& host_device() {
  static HostDevice* const device = new HostDevice("cpu:0");
  return *device;
}

Device& guarded_device() {
  static GuardedDevice* const device = new GuardedDevice(host_memory_bytes());
  return *device;
}

GuardedDevice::GuardedDevice(int64_t arena_bytes, std::string name)
    : Device(name, guarded_allocator(name, arena_bytes, arena_), /*asynchronous_streams=*/true) {}

GuardedDevice::~GuardedDevice() {
  for (Stream* stream : {transfer_.get(), compute_.get()}) {
    try {
      stream->synchronize();
    } catch (...) {  // a failed copy reported to whoever waited on it; a destructor cannot throw
    }
  }
}

bool GuardedDevice::arena_open() const { return arena_->is_open(); }

void GuardedDevice::open_memory() { arena_->open(); }
void GuardedDevice::close_memory() { arena_->close(); }

std::vector<Buffer> GuardedDevice::execute(Executable& program, std::span<const Buffer> arguments) {
  for (const Buffer& a : arguments) check_owned(a, "execute");
  // On the caller's thread, not the compute stream: replicas sharing this device run their
  // programs at once and meet inside them (all_reduce), so one queue would deadlock them.
  wait_ready(arguments);
  MemoryAccess access(*this);
  return run_over_views(program, arguments, [this](HostTensor r) {
    Buffer b = allocate(r.shape());
    std::memcpy(b.device_address(), r.raw_data(), static_cast<size_t>(r.byte_size()));
    return b;
  });
}

}  // namespace kiln::runtime
