#include "kiln/keras/trainer/step_input.h"

#include "kiln/data/transforms/prefetch_to_device.h"

namespace kiln::keras {

StepInput::StepInput(const data::Dataset& dataset, uint64_t epoch, trace::DeviceIterator::Split split) {
  if (data::device_prefetch_of(dataset)) {
    device_.emplace(dataset, epoch, std::move(split));
  } else {
    host_.emplace(dataset.iterator(epoch));
  }
}

std::optional<StepBatch> StepInput::next() {
  if (device_) {
    std::optional<trace::DeviceBatch> b = device_->next();
    if (!b) return std::nullopt;
    return StepBatch{.device = std::move(b)};
  }
  std::optional<data::Element> e = host_->next();
  if (!e) return std::nullopt;
  return StepBatch{.host = std::move(*e)};
}

}  // namespace kiln::keras
