// DeviceIterator: reads a dataset that ends with prefetch_to_device (tf.data's iterator over a
// prefetch_to_device dataset, the TPU infeed). Each host element is split into per-replica
// parts, and every part's components are queued for copying on the device's transfer stream
// buffer_size elements ahead of the consumer: when next() hands out element n, the copies of
// n+1 .. n+buffer_size are already queued, so they run while the step on n does. A step reads
// the buffers after their ready events (Device::execute waits on them). On cpu:0 the buffers
// are the host tensors themselves.
//
//   auto ds = data::Dataset::from_tensor_slices({x, y}).batch(128).prefetch_to_device(device);
//   trace::DeviceIterator it(ds);
//   while (auto b = it.next()) train_step.call_on_device(b->replicas[0]);
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/data/iterator.h"
#include "kiln/runtime/buffer.h"
#include "kiln/runtime/device.h"

namespace kiln::data {
struct DevicePrefetch;
}

namespace kiln::trace {

/// One element on the device.
struct DeviceBatch {
  std::vector<std::vector<runtime::Buffer>> replicas;  // [replica][component]
  std::vector<Shape> shapes;                           // the host element's components
  /// "(f32[128,784], i32[128])", as Element::shapes_string.
  std::string shapes_string() const;
};

class DeviceIterator {
 public:
  /// A host element to the parts the replicas get (Strategy::split_batch), in replica order.
  using Split = std::function<std::vector<data::Element>(const data::Element&)>;

  /// ValueError unless `dataset` ends with prefetch_to_device. `epoch` as in
  /// Dataset::iterator; an empty `split` gives one replica the whole element.
  explicit DeviceIterator(const data::Dataset& dataset, uint64_t epoch = 0, Split split = {});

  runtime::Device& device() const { return *device_; }
  /// The next element's buffers (their copies queued, maybe not done), or nullopt at the end.
  std::optional<DeviceBatch> next();
  /// The host pipeline's position plus the elements copied ahead but not yet handed out, so a
  /// restored iterator yields exactly what this one would have.
  std::vector<uint8_t> save();
  /// Continues from save()'s position (call before next()).
  void restore(std::span<const uint8_t> state);
  /// The host pipeline's statistics.
  data::PipelineStats stats() const { return host_.stats(); }
  /// Elements whose copies are queued ahead of the consumer (tests).
  size_t queued() const { return queue_.size(); }

 private:
  struct Queued {
    data::Element host;  // kept for save() (the copies keep their own reference)
    DeviceBatch batch;
  };
  DeviceIterator(const data::DevicePrefetch& prefetch, uint64_t epoch, Split split);
  Queued place(data::Element element) const;
  /// Queues copies until buffer_size + 1 elements are ahead (the next one and buffer_size more).
  void fill();

  runtime::Device* device_;
  size_t buffer_size_;
  Split split_;
  data::Iterator host_;
  std::deque<Queued> queue_;
  bool exhausted_ = false;
};

}  // namespace kiln::trace
