// prefetch_to_device's recipe step. Its own iterator cannot yield device buffers as Elements
// (HostTensors), so it refuses, naming the consumers that can; a later recipe step over it
// fails the same way when its iterator is made.
#include "kiln/data/transforms/prefetch_to_device.h"

#include "kiln/core/check.h"
#include "kiln/data/transforms/prefetch.h"

namespace kiln::data {
namespace {

class PrefetchToDeviceNode : public DatasetNode {
 public:
  PrefetchToDeviceNode(NodePtr host_input, runtime::Device& device, int buffer_size)
      : DatasetNode("prefetch_to_device", {host_input}), device_(&device), buffer_size_(buffer_size) {}
  bool keeps_elements() const override { return true; }
  int64_t cardinality() const override { return input_cardinality(); }

  IteratorPtr make_iterator(const IteratorContext&) const override {
    KILN_THROW(DataError, "[prefetch_to_device] this dataset's elements live in a device's memory, which a host "
               "iterator cannot hand out. Hint: pass the dataset to Model::fit/evaluate/predict, or read it with "
               "trace::DeviceIterator (kiln/trace/device_iterator.h); prefetch_to_device must be the last step "
               "of the recipe.");
  }

  DevicePrefetch info() const {
    return {.device = device_, .buffer_size = buffer_size_, .host_input = Dataset(inputs()[0])};
  }

 private:
  runtime::Device* device_;
  int buffer_size_;
};

}  // namespace

NodePtr make_prefetch_to_device_node(NodePtr input, runtime::Device& device, int buffer_size) {
  if (buffer_size <= 0)
    KILN_THROW(ValueError, "[prefetch_to_device] buffer_size must be positive (the elements copied ahead of the "
               "consumer), received ", buffer_size, ".");
  if (dynamic_cast<const PrefetchToDeviceNode*>(input.get()) != nullptr)
    KILN_THROW(ValueError, "[prefetch_to_device] the dataset is already prefetched to a device.");
  return std::make_shared<PrefetchToDeviceNode>(make_prefetch_node(std::move(input), buffer_size), device,
                                                buffer_size);
}

std::optional<DevicePrefetch> device_prefetch_of(const Dataset& dataset) {
  const auto* node = dynamic_cast<const PrefetchToDeviceNode*>(dataset.node().get());
  if (node == nullptr) return std::nullopt;
  return node->info();
}

}  // namespace kiln::data
