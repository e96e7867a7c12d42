// prefetch_to_device: the last step of a recipe whose elements go to a device's memory. The
// data layer sits below the runtime, so it only records the device and the host recipe ahead
// of it; the consumer that can copy (trace::DeviceIterator) reads them with device_prefetch_of.
#pragma once

#include <optional>

#include "kiln/data/dataset.h"

namespace kiln::data {

/// What Dataset::prefetch_to_device recorded.
struct DevicePrefetch {
  runtime::Device* device = nullptr;  // process-wide, never destroyed (runtime/host_device.h)
  int buffer_size = 0;                // elements copied ahead of the consumer
  Dataset host_input;                 // the host recipe, with a prefetch of buffer_size last
};

/// The recipe step of Dataset::prefetch_to_device (see there).
NodePtr make_prefetch_to_device_node(NodePtr input, runtime::Device& device, int buffer_size);
/// `dataset`'s device step when it ends with prefetch_to_device, else nullopt.
std::optional<DevicePrefetch> device_prefetch_of(const Dataset& dataset);

}  // namespace kiln::data
