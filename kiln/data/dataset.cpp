// Dataset: each method wraps the recipe step its transform file builds.
#include "kiln/data/dataset.h"

#include "kiln/core/check.h"
#include "kiln/data/readers/file_list.h"
#include "kiln/data/sources/generator.h"
#include "kiln/data/sources/tensor_slices.h"
#include "kiln/data/transforms/batch.h"
#include "kiln/data/transforms/cache.h"
#include "kiln/data/transforms/filter.h"
#include "kiln/data/transforms/interleave.h"
#include "kiln/data/transforms/map.h"
#include "kiln/data/transforms/map_and_batch.h"
#include "kiln/data/transforms/prefetch.h"
#include "kiln/data/transforms/prefetch_to_device.h"
#include "kiln/data/transforms/repeat.h"
#include "kiln/data/transforms/select.h"
#include "kiln/data/transforms/shuffle.h"
#include "kiln/data/transforms/zip.h"

namespace kiln::data {

Dataset Dataset::from_tensor_slices(std::vector<HostTensor> components) {
  return Dataset(make_tensor_slices_node(std::move(components)));
}

Dataset Dataset::from_generator(GeneratorFactory generator_factory) {
  return Dataset(make_generator_node(std::move(generator_factory)));
}

Dataset Dataset::list_files(const std::string& pattern, bool shuffle, std::optional<uint64_t> seed) {
  std::vector<std::string> files = match_files(pattern);
  const auto n = static_cast<int64_t>(files.size());
  Dataset d(make_file_list_node(std::move(files)));
  return shuffle ? d.shuffle(n, seed) : d;
}

Dataset Dataset::zip(std::vector<Dataset> datasets) {
  std::vector<NodePtr> nodes;
  for (const Dataset& d : datasets) nodes.push_back(d.node());
  return Dataset(make_zip_node(std::move(nodes)));
}

Dataset Dataset::map(MapFn fn, int num_parallel_calls, bool deterministic) const {
  return map(std::move(fn), {.num_parallel_calls = num_parallel_calls, .deterministic = deterministic});
}

Dataset Dataset::map(MapFn fn, MapOptions options) const {
  return map(MapFunction{.fn = std::move(fn)}, options);
}

Dataset Dataset::map(MapFunction fn, MapOptions options) const {
  return Dataset(make_map_node(node_, std::move(fn), options));
}

Dataset Dataset::filter(Predicate predicate) const {
  return Dataset(make_filter_node(node_, std::move(predicate)));
}

Dataset Dataset::shuffle(int64_t buffer_size, std::optional<uint64_t> seed,
                         bool reshuffle_each_iteration) const {
  return Dataset(apply_before_stateless_map(node_, [&](NodePtr in) {
    return make_shuffle_node(std::move(in), buffer_size, seed, reshuffle_each_iteration);
  }));
}

Dataset Dataset::repeat(int64_t count) const {
  return Dataset(apply_before_stateless_map(node_, [&](NodePtr in) { return make_repeat_node(std::move(in), count); }));
}

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  // A parallel stateless map right before the batch runs fused with it (map_and_batch.h).
  if (std::optional<StatelessMap> map = as_stateless_map(node_); map && map->options.num_parallel_calls != 0)
    return Dataset(make_map_and_batch_node(map->input, map->fn, map->options, batch_size, drop_remainder));
  return Dataset(make_batch_node(node_, batch_size, drop_remainder));
}

Dataset Dataset::unbatch() const { return Dataset(make_unbatch_node(node_)); }

Dataset Dataset::prefetch(int buffer_size) const {
  return Dataset(make_prefetch_node(node_, buffer_size));
}

Dataset Dataset::prefetch_to_device(runtime::Device& device, int buffer_size) const {
  return Dataset(make_prefetch_to_device_node(node_, device, buffer_size));
}

Dataset Dataset::take(int64_t count) const { return Dataset(make_take_node(node_, count)); }

Dataset Dataset::skip(int64_t count) const { return Dataset(make_skip_node(node_, count)); }

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  return Dataset(make_shard_node(node_, num_shards, index));
}

Dataset Dataset::cache() const { return Dataset(make_cache_node(node_)); }

Dataset Dataset::interleave(InterleaveFn fn, int cycle_length, int block_length,
                            int num_parallel_calls) const {
  return Dataset(make_interleave_node(node_, std::move(fn), cycle_length, block_length,
                                      num_parallel_calls));
}

}  // namespace kiln::data
