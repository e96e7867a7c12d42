// DistributedDataset: a dataset whose elements are split over a strategy's replicas
// (tf.distribute's experimental_distribute_dataset). Global batches are sliced per replica;
// across workers each process keeps its replicas' rows (or, from a function, reads its own
// shard of the input).
#pragma once

#include <memory>
#include <optional>

#include "kiln/data/dataset.h"
#include "kiln/distribute/strategy.h"

namespace kiln::distribute {

class DistributedDataset {
 public:
  class Iterator {
   public:
    /// This worker's per-replica shards of the next batch; nullopt at the end.
    std::optional<PerReplica<data::Element>> next();
    /// The underlying pipeline (stats, save/restore).
    data::Iterator& base() { return it_; }

   private:
    friend class DistributedDataset;
    Iterator(std::shared_ptr<const Strategy> strategy, data::Iterator it, bool per_worker)
        : strategy_(std::move(strategy)), it_(std::move(it)), per_worker_(per_worker) {}
    std::shared_ptr<const Strategy> strategy_;
    data::Iterator it_;
    bool per_worker_;
  };

  /// The running pipeline; `epoch` as in Dataset::iterator.
  Iterator iterator(uint64_t epoch = 0) const { return Iterator(strategy_, dataset_.iterator(epoch), per_worker_); }
  /// The per-process dataset whose batches are split.
  const data::Dataset& dataset() const { return dataset_; }

 private:
  friend class Strategy;
  DistributedDataset(std::shared_ptr<const Strategy> strategy, data::Dataset dataset, bool per_worker)
      : strategy_(std::move(strategy)), dataset_(std::move(dataset)), per_worker_(per_worker) {}
  std::shared_ptr<const Strategy> strategy_;
  data::Dataset dataset_;
  bool per_worker_;  // batches are per worker (from a function), not global
};

}  // namespace kiln::distribute
