// Model under a distribute::Strategy: each compiled step call splits the global batch over the
// replicas and runs them together; their all_reduce instructions (gradients in
// apply_gradients, metric results in update_metrics) make every replica's outputs equal.
#include "kiln/distribute/strategy.h"
#include "kiln/keras/models/model.h"

namespace kiln::keras {

bool Model::is_chief() const { return strategy_ == nullptr || strategy_->is_chief(); }

std::vector<HostTensor> Model::call_step(Function& step, const std::vector<HostTensor>& args) {
  if (strategy_ == nullptr || strategy_->num_replicas_in_sync() == 1) return step(args);
  distribute::PerReplica<data::Element> shards = strategy_->split_batch(data::Element(args));
  distribute::PerReplica<std::vector<HostTensor>> outputs = strategy_->run(
      [&](const data::Element& shard) { return step(std::vector<HostTensor>(shard.begin(), shard.end())); }, shards);
  return std::move(outputs[0]);
}

void Model::compile_for_spec(const data::Dataset& dataset, bool train) {
  const std::optional<std::vector<Shape>> spec = dataset.element_spec();
  // Unknown, or not (x..., y...) batches: the first batch's checks will say what is wrong.
  if (!spec || spec->size() != num_inputs() + num_outputs()) return;
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
