// The Trainer's steps under the model's distribute::Strategy: each compiled step call splits
// the global batch over the replicas and runs them together; their all_reduce instructions
// (gradients in apply_gradients, metric results in update_metrics) make every replica's
// outputs equal. A batch prefetched to the device arrives split already (step_input), as
// tf.distribute's experimental_distribute_dataset splits on the host and copies each
// replica's rows. The k-step program of steps_per_execution takes its k batches stacked.
#include <cstring>

#include "kiln/core/check.h"
#include "kiln/data/transforms/prefetch_to_device.h"
#include "kiln/distribute/strategy.h"
#include "kiln/keras/trainer/trainer.h"
#include "kiln/trace/eager.h"

namespace kiln::keras {

std::shared_ptr<runtime::Backend> Trainer::single_replica_backend() const {
  const std::shared_ptr<distribute::Strategy>& strategy = model_->distribute_strategy();
  // A MirroredStrategy over one GPU (auto_detect's choice on a machine with one): the steps
  // compile for that GPU and the variables live there, with no replica threads or all_reduce.
  if (strategy == nullptr || strategy->num_replicas_in_sync() != 1) return nullptr;
  return strategy->replica_backend(0);
}

std::vector<HostTensor> Trainer::call_step(Function& step, const StepBatch& batch) {
  const std::shared_ptr<distribute::Strategy>& strategy = model_->distribute_strategy();
  const bool split = strategy != nullptr && strategy->num_replicas_in_sync() > 1;
  if (batch.device) {  // already split and on the device (step_input)
    const distribute::PerReplica<std::vector<runtime::Buffer>> shards{batch.device->replicas};
    if (!split) return step.call_on_device(shards[0]);
    auto on_replica = [&](const std::vector<runtime::Buffer>& shard) { return step.call_on_device(shard); };
    return std::move(strategy->run(on_replica, shards)[0]);
  }
  const std::vector<HostTensor> args = DataAdapter(*model_).step_args(batch.host);
  if (!split) return step(args);
  distribute::PerReplica<data::Element> shards = strategy->split_batch(data::Element(args));
  distribute::PerReplica<std::vector<HostTensor>> outputs = strategy->run(
      [&](const data::Element& shard) { return step(std::vector<HostTensor>(shard.begin(), shard.end())); }, shards);
  return std::move(outputs[0]);
}

StepInput Trainer::step_input(const data::Dataset& dataset, uint64_t epoch, StepKind kind, int device_prefetch) {
  const std::shared_ptr<distribute::Strategy>& strategy = model_->distribute_strategy();
  const std::shared_ptr<runtime::Backend> single = single_replica_backend();
  runtime::Device& device = (single ? single : trace::default_backend())->device();
  const std::optional<data::DevicePrefetch> prefetch = data::device_prefetch_of(dataset);
  const bool k_steps = kind == StepKind::kTrain && model_->compile_options().steps_per_execution > 1;
  if (device_prefetch < 0)
    KILN_THROW(ValueError, "[", model_->name(), "] device_prefetch must be >= 0 (0: copy each batch in its step), received ",
               device_prefetch, ".");
  if (prefetch && prefetch->device != &device)
    KILN_THROW(ValueError, "[", model_->name(), "] the dataset is prefetched to ", prefetch->device->name(),
               ", but the model's steps run on ", device.name(), ". Hint: prefetch_to_device(the backend's device()), "
               "or leave prefetch_to_device out: fit prefetches to the device by default.");
  if (prefetch && k_steps)
    KILN_THROW(ValueError, "[", model_->name(), "] steps_per_execution = ", model_->compile_options().steps_per_execution,
               " over a prefetch_to_device dataset is not built: the k-step program stacks its k batches on the host. "
               "Hint: leave prefetch_to_device out (fit then stacks and copies the k batches), or use "
               "steps_per_execution = 1.");
  const data::Dataset input = !prefetch && !device.host_addressable() && !k_steps && device_prefetch > 0
                                  ? dataset.prefetch_to_device(device, device_prefetch)
                                  : dataset;
  const bool split = strategy != nullptr && strategy->num_replicas_in_sync() > 1;
  return StepInput(input, epoch, [model = model_, kind, split](const data::Element& e) -> std::vector<data::Element> {
    if (kind == StepKind::kPredict) return {data::Element(DataAdapter(*model).predict_args(e))};  // one replica, the inputs alone
    data::Element args(DataAdapter(*model).step_args(e));
    if (!split) return {std::move(args)};
    return model->distribute_strategy()->split_batch(args).values;
  });
}

void Trainer::compile_for_spec(const data::Dataset& dataset, bool train) {
  const std::shared_ptr<distribute::Strategy>& strategy = model_->distribute_strategy();
  const Model& model = *model_;
  std::optional<std::vector<Shape>> spec = dataset.element_spec();
  // Unknown, or not (x..., y..., [w...]) batches: the first batch's checks will say what is wrong.
  const size_t n = model.num_inputs() + model.num_outputs(), outputs = model.num_outputs();
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
        dims.insert(dims.begin(), model_->compile_options().steps_per_execution);
        k_steps.emplace_back(a.dtype(), std::move(dims));
      }
      multi_step_train_function_->compile(k_steps);
    }
  };
  const int64_t rows = spec->front().dims()[0];
  if (strategy == nullptr || strategy->num_replicas_in_sync() == 1) return compile(rows);
  strategy->run_replicas([&](int r) { compile(strategy->shard_rows(rows, r)); });
}

std::vector<std::vector<HostTensor>> Trainer::call_multi_step(const std::vector<StepBatch>& batches) {
  const std::shared_ptr<distribute::Strategy>& strategy = model_->distribute_strategy();
  // Each replica's shard of every batch, stacked: [k, rows per replica, ...].
  std::vector<std::vector<HostTensor>> shards;  // [batch][replica * components + c]
  const bool split = strategy != nullptr && strategy->num_replicas_in_sync() > 1;
  size_t replicas = 1;  // local replicas
  for (const StepBatch& b : batches) {
    KILN_CHECK(!b.device, "the k-step program stacks host batches (step_input keeps them on the host)");
    std::vector<HostTensor> args = DataAdapter(*model_).step_args(b.host);
    if (!split) {
      shards.push_back(args);
      continue;
    }
    distribute::PerReplica<data::Element> parts = strategy->split_batch(data::Element(args));
    replicas = parts.size();
    std::vector<HostTensor> flat;
    for (size_t r = 0; r < replicas; ++r) flat.insert(flat.end(), parts[r].begin(), parts[r].end());
    shards.push_back(flat);
  }
  const size_t components = shards[0].size() / replicas;
  distribute::PerReplica<std::vector<HostTensor>> stacked;
  for (size_t r = 0; r < replicas; ++r) {
    std::vector<HostTensor> args;
    for (size_t c = 0; c < components; ++c) {
      const HostTensor& row0 = shards[0][r * components + c];
      Dims dims = row0.dims();
      dims.insert(dims.begin(), static_cast<int64_t>(batches.size()));
      HostTensor t = HostTensor::uninitialized(row0.shape().with_dims(dims));
      for (size_t j = 0; j < batches.size(); ++j)
        std::memcpy(static_cast<std::byte*>(t.raw_data()) + j * static_cast<size_t>(row0.byte_size()),
                    shards[j][r * components + c].raw_data(), static_cast<size_t>(row0.byte_size()));
      args.push_back(std::move(t));
    }
    stacked.values.push_back(std::move(args));
  }
  std::vector<HostTensor> out = split ? std::move(strategy->run(
                                            [&](const std::vector<HostTensor>& a) { return (*multi_step_train_function_)(a); },
                                            stacked)[0])
                                      : (*multi_step_train_function_)(stacked[0]);
  // Output m is [k, ...]: step j's logs take row j of each.
  std::vector<std::vector<HostTensor>> per_step(batches.size());
  for (const HostTensor& o : out) {
    const Shape row(o.dtype(), Dims(o.dims().begin() + 1, o.dims().end()));
    for (size_t j = 0; j < batches.size(); ++j) {
      HostTensor r = HostTensor::uninitialized(row);
      std::memcpy(r.raw_data(), static_cast<const std::byte*>(o.raw_data()) + j * static_cast<size_t>(row.byte_size()),
                  static_cast<size_t>(row.byte_size()));
      per_step[j].push_back(std::move(r));
    }
  }
  return per_step;
}

std::vector<Logs> Trainer::run_train_steps(const std::vector<StepBatch>& batches) {
  std::vector<Logs> logs;
  // The k-step program takes k batches of one shape (a short last batch runs on its own).
  bool stackable = multi_step_train_function_ &&
                   static_cast<int>(batches.size()) == model_->compile_options().steps_per_execution;
  for (const StepBatch& b : batches) stackable = stackable && b.shapes_string() == batches[0].shapes_string();
  if (stackable) {
    for (const std::vector<HostTensor>& step : call_multi_step(batches)) logs.push_back(outputs_.logs_from(step));
    return logs;
  }
  for (const StepBatch& b : batches) logs.push_back(outputs_.logs_from(call_step(*train_function_, b)));
  return logs;
}

}  // namespace kiln::keras
