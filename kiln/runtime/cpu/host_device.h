// The host as a device (cpu:0): buffers are host memory, so to_device() and execute() copy
// nothing; and the guarded test device (guarded_cpu:0), whose buffers sit in an arena that is
// unreadable by host code except while the device itself works on it, so a path that treats
// device memory as host memory crashes in tests instead of working by accident on the CPU and
// failing on a GPU.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/runtime/device.h"

namespace kiln::cpu {

class HostDevice final : public runtime::Device {
 public:
  explicit HostDevice(std::string name = "cpu:0");
  bool host_addressable() const override { return true; }
  /// The same memory as `host` (no copy, ready at once).
  runtime::Buffer to_device(const HostTensor& host) override;
  std::vector<runtime::Buffer> execute(runtime::Executable& program,
                                       std::span<const runtime::Buffer> arguments) override;
};

class GuardedArena;

class GuardedDevice final : public runtime::Device {
 public:
  /// Reserves `arena_bytes` of address space (pages are committed as buffers use them);
  /// that is the device's memory size. Copies run on an asynchronous transfer stream.
  explicit GuardedDevice(int64_t arena_bytes = int64_t{1} << 30, std::string name = "guarded_cpu:0");
  bool host_addressable() const override { return false; }
  runtime::Buffer to_device(const HostTensor& host) override;
  HostTensor to_host(const runtime::Buffer& buffer) override;
  std::vector<runtime::Buffer> execute(runtime::Executable& program,
                                       std::span<const runtime::Buffer> arguments) override;
  /// True while a device operation has the arena readable (tests).
  bool arena_open() const;

 private:
  GuardedArena* arena_;  // owned by the allocator, which lives as long as this device
};

}  // namespace kiln::cpu
