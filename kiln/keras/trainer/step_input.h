// StepInput: where fit, evaluate and predict read their batches: a host iterator, or, for a
// dataset prefetched to a device (explicitly, or by fit's default on a device other than the
// host), a trace::DeviceIterator whose batches arrive split per replica and already on the
// device, so the steps take them without a host copy.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/data/dataset.h"
#include "kiln/data/iterator.h"
#include "kiln/trace/device_iterator.h"

namespace kiln::keras {

/// Elements fit/evaluate keep copied ahead on a device other than the host when the dataset is
/// not prefetched to one already (tf.data's prefetch_to_device default, Keras-on-TPU's infeed).
inline constexpr int kDefaultDevicePrefetch = 2;

/// One batch: host components, or per-replica buffers on the device.
struct StepBatch {
  data::Element host;                      // empty for a device batch
  std::optional<trace::DeviceBatch> device;

  size_t size() const { return device ? device->shapes.size() : host.size(); }
  /// Rows of the first component (the batch size).
  int64_t rows() const { return device ? device->shapes.at(0).dims().at(0) : host[0].dims().at(0); }
  std::string shapes_string() const { return device ? device->shapes_string() : host.shapes_string(); }
};

class StepInput {
 public:
  /// Host batches from `dataset.iterator(epoch)`, or device ones when it ends with
  /// prefetch_to_device (`split` gives each replica its part of a host batch).
  StepInput(const data::Dataset& dataset, uint64_t epoch, trace::DeviceIterator::Split split);

  std::optional<StepBatch> next();
  std::vector<uint8_t> save() { return device_ ? device_->save() : host_->save(); }
  void restore(std::span<const uint8_t> state) { device_ ? device_->restore(state) : host_->restore(state); }
  data::PipelineStats stats() const { return device_ ? device_->stats() : host_->stats(); }

 private:
  std::optional<data::Iterator> host_;
  std::optional<trace::DeviceIterator> device_;
};

}  // namespace kiln::keras
