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

namespace kiln::runtime {

/// Physical memory of this host in bytes.
int64_t host_memory_bytes();

class Device;
/// The process's host device, cpu:0, which every CPU and reference backend runs on. Devices are
/// process-wide, as GPUs are: buffers and variables placed on one stay valid whichever backend
/// object made them (never destroyed, so a buffer outliving main's objects stays sound).
Device& host_device();
/// The process's guarded test device, guarded_cpu:0, with the host's memory size as its arena.
Device& guarded_device();

class HostDevice final : public Device {
 public:
  /// `memory_bytes`: the most its allocator reserves (0: host_memory_bytes()).
  explicit HostDevice(std::string name = "cpu:0", int64_t memory_bytes = 0);
  bool host_addressable() const override { return true; }
  /// The same memory as `host` (no copy, ready at once).
  Buffer to_device(const HostTensor& host) override;
  std::vector<Buffer> execute(Executable& program,
                                       std::span<const Buffer> arguments) override;
};

class GuardedArena;

class GuardedDevice final : public Device {
 public:
  /// Reserves `arena_bytes` of address space (pages are committed as buffers use them);
  /// that is the device's memory size. Copies run on an asynchronous transfer stream.
  explicit GuardedDevice(int64_t arena_bytes = int64_t{1} << 30, std::string name = "guarded_cpu:0");
  /// Finishes the queued copies first: they call open_memory(), which must still be this
  /// class's when they run.
  ~GuardedDevice() override;
  bool host_addressable() const override { return false; }
  std::vector<Buffer> execute(Executable& program,
                                       std::span<const Buffer> arguments) override;
  /// True while a device operation has the arena readable (tests).
  bool arena_open() const;

 protected:
  void open_memory() override;
  void close_memory() override;

 private:
  GuardedArena* arena_;  // owned by the allocator, which lives as long as this device
};

}  // namespace kiln::runtime
