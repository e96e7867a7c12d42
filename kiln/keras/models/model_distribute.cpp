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

}  // namespace kiln::keras
