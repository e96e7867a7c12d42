#include "kiln/runtime/device.h"

#include <cstring>

#include "kiln/core/check.h"

namespace kiln::runtime {

Device::Device(std::string name, std::unique_ptr<CachingAllocator> allocator, bool asynchronous_streams)
    : name_(std::move(name)), allocator_(std::move(allocator)),
      transfer_(std::make_unique<Stream>(name_ + "/transfer", asynchronous_streams)),
      compute_(std::make_unique<Stream>(name_ + "/compute", asynchronous_streams)) {}

void Device::check_owned(const Buffer& buffer, const char* operation) const {
  if (!buffer.defined())
    KILN_THROW(ValueError, "[", name_, " ", operation, "] the buffer is undefined.");
  if (&buffer.device() != this)
    KILN_THROW(ValueError, "[", name_, " ", operation, "] the buffer lives on ", buffer.device().name(),
               ", not on this device. Hint: copy it with to_host() and to_device().");
}

Buffer Device::allocate(const Shape& shape) {
  return Buffer(this, shape, allocator_->allocate(shape.byte_size()), Event());
}

Buffer Device::to_device(const HostTensor& host) {
  Buffer b = allocate(host.shape());
  Event done = transfer_->enqueue([this, dst = b.device_address(), host] {
    MemoryAccess access(*this);
    std::memcpy(dst, host.raw_data(), static_cast<size_t>(host.byte_size()));
  });
  return Buffer(this, b.shape(), b.memory(), done);
}

HostTensor Device::to_host(const Buffer& buffer) {
  check_owned(buffer, "to_host");
  buffer.ready().wait();
  MemoryAccess access(*this);
  HostTensor out = HostTensor::uninitialized(buffer.shape());
  std::memcpy(out.raw_data(), buffer.device_address(), static_cast<size_t>(out.byte_size()));
  return out;
}

HostTensor Device::host_view(const Buffer& buffer) {
  check_owned(buffer, "host_view");
  if (!host_addressable())
    KILN_THROW(ValueError, "[", name_, " host_view] this device's memory is not host-addressable, so a ",
               buffer.shape(), " buffer cannot be read in place. Hint: copy it with to_host().");
  buffer.ready().wait();
  return HostTensor::from_storage(buffer.shape(), buffer.memory());
}

}  // namespace kiln::runtime
