// Buffer: an array in a device's memory. Memory of a device that is not host-addressable (a
// GPU, the guarded test device) cannot be read by host code: reads go through
// Device::to_host, which copies. A Buffer carries the Event of the work that writes it;
// device operations wait on it before they read.
#pragma once

#include <cstddef>
#include <memory>

#include "kiln/core/shape.h"
#include "kiln/runtime/stream.h"

namespace kiln::runtime {

class Device;

class Buffer {
 public:
  Buffer() = default;
  /// Made by devices: `memory` holds at least shape.byte_size() bytes of `device`'s memory.
  Buffer(Device* device, Shape shape, std::shared_ptr<std::byte> memory, Event ready)
      : device_(device), shape_(std::move(shape)), memory_(std::move(memory)), ready_(std::move(ready)) {}

  bool defined() const { return device_ != nullptr; }
  const Shape& shape() const { return shape_; }
  Device& device() const { return *device_; }
  /// The address a kernel of device() uses; host code must not dereference it unless the
  /// device is host-addressable.
  std::byte* device_address() const { return memory_.get(); }
  const std::shared_ptr<std::byte>& memory() const { return memory_; }
  /// Completes when the work writing this buffer (a copy, a program) has finished.
  const Event& ready() const { return ready_; }
  bool shares_memory_with(const Buffer& other) const { return memory_ == other.memory_; }

 private:
  Device* device_ = nullptr;
  Shape shape_;
  std::shared_ptr<std::byte> memory_;
  Event ready_;
};

}  // namespace kiln::runtime
