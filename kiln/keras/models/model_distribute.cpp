// Model under a distribute::Strategy: each compiled step call splits the global batch over the
// replicas and runs them together; their all_reduce instructions (gradients in
// apply_gradients, metric results in update_metrics) make every replica's outputs equal. A
// batch prefetched to the device arrives split already (step_input), as tf.distribute's
// experimental_distribute_dataset splits on the host and copies each replica's rows.
#include "kiln/core/check.h"
#include "kiln/data/transforms/prefetch_to_device.h"
#include "kiln/distribute/strategy.h"
#include "kiln/keras/models/model.h"
#include "kiln/trace/eager.h"

namespace kiln::keras {

bool Model::is_chief() const { return strategy_ == nullptr || strategy_->is_chief(); }

std::shared_ptr<runtime::Backend> Model::single_replica_backend() const {
  // A MirroredStrategy over one GPU (auto_detect's choice on a machine with one): the steps
  // compile for that GPU and the variables live there, with no replica threads or all_reduce.
  if (strategy_ == nullptr || strategy_->num_replicas_in_sync() != 1) return nullptr;
  return strategy_->replica_backend(0);
}

std::vector<HostTensor> Model::call_step(Function& step, const StepBatch& batch) {
  const bool split = strategy_ != nullptr && strategy_->num_replicas_in_sync() > 1;
  if (batch.device) {  // already split and on the device (step_input)
    const distribute::PerReplica<std::vector<runtime::Buffer>> shards{batch.device->replicas};
    if (!split) return step.call_on_device(shards[0]);
    auto on_replica = [&](const std::vector<runtime::Buffer>& shard) { return step.call_on_device(shard); };
    return std::move(strategy_->run(on_replica, shards)[0]);
  }
  const std::vector<HostTensor> args = step_args(batch.host);
  if (!split) return step(args);
  distribute::PerReplica<data::Element> shards = strategy_->split_batch(data::Element(args));
  distribute::PerReplica<std::vector<HostTensor>> outputs = strategy_->run(
      [&](const data::Element& shard) { return step(std::vector<HostTensor>(shard.begin(), shard.end())); }, shards);
  return std::move(outputs[0]);
}

StepInput Model::step_input(const data::Dataset& dataset, uint64_t epoch, StepKind kind, int device_prefetch) {
  const std::shared_ptr<runtime::Backend> single = single_replica_backend();
  runtime::Device& device = (single ? single : trace::default_backend())->device();
  const std::optional<data::DevicePrefetch> prefetch = data::device_prefetch_of(dataset);
  const bool k_steps = kind == StepKind::kTrain && compiled_.steps_per_execution > 1;
  if (device_prefetch < 0)
    KILN_THROW(ValueError, "[", name_, "] device_prefetch must be >= 0 (0: copy each batch in its step), received ",
               device_prefetch, ".");
  if (prefetch && prefetch->device != &device)
    KILN_THROW(ValueError, "[", name_, "] the dataset is prefetched to ", prefetch->device->name(),
               ", but the model's steps run on ", device.name(), ". Hint: prefetch_to_device(the backend's device()), "
               "or leave prefetch_to_device out: fit prefetches to the device by default.");
  if (prefetch && k_steps)
    KILN_THROW(ValueError, "[", name_, "] steps_per_execution = ", compiled_.steps_per_execution,
               " over a prefetch_to_device dataset is not built: the k-step program stacks its k batches on the host. "
               "Hint: leave prefetch_to_device out (fit then stacks and copies the k batches), or use "
               "steps_per_execution = 1.");
  const data::Dataset input = !prefetch && !device.host_addressable() && !k_steps && device_prefetch > 0
                                  ? dataset.prefetch_to_device(device, device_prefetch)
                                  : dataset;
  const bool split = strategy_ != nullptr && strategy_->num_replicas_in_sync() > 1;
  return StepInput(input, epoch, [this, kind, split](const data::Element& e) -> std::vector<data::Element> {
    if (kind == StepKind::kPredict) return {data::Element(predict_args(e))};  // one replica, the inputs alone
    data::Element args(step_args(e));
    if (!split) return {std::move(args)};
    return strategy_->split_batch(args).values;
  });
}

void Model::compile_for_spec(const data::Dataset& dataset, bool train) {
  std::optional<std::vector<Shape>> spec = dataset.element_spec();
  // Unknown, or not (x..., y..., [w...]) batches: the first batch's checks will say what is wrong.
  const size_t n = num_inputs() + num_outputs(), outputs = num_outputs();
  if (!spec || (spec->size() != n && spec->size() != n + 1 && spec->size() != n + outputs)) return;
  if (spec->size() == n + 1 && outputs > 1) spec->insert(spec->end(), outputs - 1, spec->back());  // as step_args
  for (const Shape& s : *spec)
    if (s.rank() == 0 || s.dims()[0] != spec->front().dims()[0]) return;
  auto compile = [&](int64_t rows) {
    std::vector<Shape> args;
    for (const Shape& s : *spec) {
      Dims dims = s.dims();
      dims[0] = rows;
      args.emplace_back(s.dtype(), std::move(dims));
    }
    if (!train) return test_function_->compile(args);
    train_function_->compile(args);
    if (multi_step_train_function_) {
      std::vector<Shape> k_steps;  // each input stacked [k, ...]
      for (const Shape& a : args) {
        Dims dims = a.dims();
        dims.insert(dims.begin(), compiled_.steps_per_execution);
        k_steps.emplace_back(a.dtype(), std::move(dims));
      }
      multi_step_train_function_->compile(k_steps);
    }
  };
  const int64_t rows = spec->front().dims()[0];
  if (strategy_ == nullptr || strategy_->num_replicas_in_sync() == 1) return compile(rows);
  strategy_->run_replicas([&](int r) { compile(strategy_->shard_rows(rows, r)); });
}

}  // namespace kiln::keras
