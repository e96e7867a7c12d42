#include "kiln/trace/device_values.h"

#include <cstring>

#include "kiln/core/check.h"
#include "kiln/trace/replica_context.h"

namespace kiln::trace {

runtime::Buffer device_value(VariableState& variable, int replica, runtime::Device& device) {
  const auto r = static_cast<size_t>(replica);
  KILN_CHECK(r < variable.device_values.size(), "variable '", variable.name, "' has no replica ", replica,
             " (ensure_mirrors runs before replicas do)");
  runtime::Buffer& b = variable.device_values[r];
  if (b.defined() && &b.device() == &device) return b;
  if (b.defined()) sync_to_host(variable, /*for_write=*/true);  // its newest value is on another device
  b = device.to_device(replica_storage(variable, replica));
  variable.device_newer[r] = 0;
  return b;
}

void note_device_update(VariableState& variable, int replica, const runtime::Buffer& result) {
  const auto r = static_cast<size_t>(replica);
  runtime::Buffer& b = variable.device_values.at(r);
  KILN_CHECK(b.defined() && &b.device() == &result.device(), "variable '", variable.name,
             "' was updated on a device it does not live on");
  if (!result.shares_memory_with(b)) {
    if (b.device().host_addressable()) {
      result.ready().wait();
      std::memcpy(b.device_address(), result.device_address(), static_cast<size_t>(b.shape().byte_size()));
    } else {
      b = result;
    }
  }
  if (!b.device().host_addressable()) variable.device_newer[r] = 1;
}

void sync_to_host(VariableState& variable, bool for_write) {
  for (size_t r = 0; r < variable.device_values.size(); ++r) {
    runtime::Buffer& b = variable.device_values[r];
    if (!b.defined() || b.device().host_addressable()) continue;
    if (variable.device_newer[r]) {
      HostTensor value = b.device().to_host(b);
      HostTensor& host = replica_storage(variable, static_cast<int>(r));
      std::memcpy(host.raw_data(), value.raw_data(), static_cast<size_t>(host.byte_size()));
      variable.device_newer[r] = 0;
    }
    if (for_write) b = runtime::Buffer();
  }
}

void discard_device_values(VariableState& variable) {
  for (size_t r = 0; r < variable.device_values.size(); ++r) {
    runtime::Buffer& b = variable.device_values[r];
    if (!b.defined() || b.device().host_addressable()) continue;
    b = runtime::Buffer();
    variable.device_newer[r] = 0;
  }
}

}  // namespace kiln::trace
