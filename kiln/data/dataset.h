// Dataset: Kiln's tf.data. An immutable recipe (cheap to copy: a shared pointer to its last
// step); iterator() builds the running pipeline. Typical use, as in the seed:
//
//   auto ds = Dataset::from_tensor_slices({x, y})
//                 .map(normalize, kAutotune)
//                 .shuffle(10000, /*seed=*/42)
//                 .repeat()
//                 .batch(128, /*drop_remainder=*/true)
//                 .prefetch(kAutotune);
//   Iterator it = ds.iterator();
//   while (auto batch = it.next()) train_step((*batch)[0], (*batch)[1]);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/data/autotune.h"
#include "kiln/data/element.h"
#include "kiln/data/iterator.h"
#include "kiln/data/iterator_base.h"
#include "kiln/data/map_function.h"

namespace kiln::runtime {
class Device;  // data/ sits below runtime/: it only names the device (see prefetch_to_device)
}

namespace kiln::data {

class Dataset;

/// Keeps an element when true (filter).
using Predicate = std::function<bool(const Element&)>;
/// Yields elements until nullopt (one pass of from_generator).
using Generator = std::function<std::optional<Element>()>;
/// Makes a fresh Generator for each pass; from_generator calls it once per iterator.
using GeneratorFactory = std::function<Generator()>;
/// Element -> dataset (interleave): typically a file name to the records of that file.
using InterleaveFn = std::function<Dataset(const Element&)>;

/// How Dataset::map runs its function (the defaults: inline, in order, possibly stateful).
struct MapOptions {
  /// 0 runs inline; n > 0 or kAutotune runs on that many threads.
  int num_parallel_calls = 0;
  /// false lets a fast element overtake a slow one.
  bool deterministic = true;
  /// A promise that the function's output depends on its input alone (no random numbers,
  /// counters or I/O). Kiln may then run the map after a shuffle or repeat that follows it:
  /// the same elements in the same order, but the shuffle buffer holds the (usually smaller)
  /// inputs and the map's outputs go to the next stage while hot in cache. (tf.data cannot see
  /// into its map functions' state any better; Kiln asks.)
  bool stateless = false;
  /// Names the function in errors ("[map 'preprocess'] ..."); tf.data's name=.
  std::string name = "";
};

/// An immutable input-pipeline recipe.
class Dataset {
 public:
  /// One element per row of the components' leading axis: from_tensor_slices({x, y}) yields
  /// (x[i], y[i]). Throws ShapeError if the leading dimensions differ or a component is a scalar.
  static Dataset from_tensor_slices(std::vector<HostTensor> components);
  /// tf.data's spelling, the components as arguments: from_tensor_slices(x) or
  /// from_tensor_slices(x, y), the same as from_tensor_slices({x, y}).
  template <typename... T>
    requires(sizeof...(T) >= 1 && (std::is_convertible_v<T, HostTensor> && ...))
  static Dataset from_tensor_slices(T&&... components) {
    return from_tensor_slices(std::vector<HostTensor>{HostTensor(std::forward<T>(components))...});
  }
  /// And as a tuple or pair, as Python passes (x, y): from_tensor_slices(std::tuple{x, y}).
  template <typename... T>
    requires(std::is_convertible_v<T, HostTensor> && ...)
  static Dataset from_tensor_slices(const std::tuple<T...>& components) {
    return std::apply([](const auto&... c) { return from_tensor_slices(std::vector<HostTensor>{HostTensor(c)...}); },
                      components);
  }
  template <typename A, typename B>
    requires(std::is_convertible_v<A, HostTensor> && std::is_convertible_v<B, HostTensor>)
  static Dataset from_tensor_slices(const std::pair<A, B>& components) {
    return from_tensor_slices(std::vector<HostTensor>{HostTensor(components.first), HostTensor(components.second)});
  }
  /// The elements `generator_factory()` yields. Saved positions restore by making a fresh
  /// generator and skipping the elements already produced, so the generator must be
  /// deterministic for restore to be exact.
  static Dataset from_generator(GeneratorFactory generator_factory);
  /// The files matching `pattern` (wildcards `*`, `?`, `[...]` in the file name), one u8[n]
  /// string element each, sorted, then shuffled with `seed` if `shuffle`. Throws DataError if
  /// nothing matches.
  static Dataset list_files(const std::string& pattern, bool shuffle = true,
                            std::optional<uint64_t> seed = std::nullopt);
  /// Elements of all datasets side by side, their components concatenated; ends with the
  /// shortest.
  static Dataset zip(std::vector<Dataset> datasets);

  /// Applies `fn` to each element. num_parallel_calls: 0 runs inline; n > 0 or kAutotune runs
  /// on that many threads. Order is kept unless deterministic is false, which lets a fast
  /// element overtake a slow one. Exceptions from fn arrive at next() as DataError("[map] ...").
  Dataset map(MapFn fn, int num_parallel_calls = 0, bool deterministic = true) const;
  /// The same with every option named: map(fn, {.num_parallel_calls = kAutotune, .stateless = true}).
  Dataset map(MapFn fn, MapOptions options) const;
  /// A map function with its batched form (see MapFunction).
  Dataset map(MapFunction fn, MapOptions options) const;
  /// A function of the element's components, as tf.data calls `lambda image, label: ...`:
  /// `map([](HostTensor image, HostTensor label) { return std::tuple{...}; })`, returning a
  /// tuple, a pair, one tensor or an Element. With kiln::Tensor parameters (include
  /// kiln/trace/traced_map.h, or kiln/kiln.h) the function is written with Kiln ops, traced
  /// once per element shape into a compiled program and run over whole batches.
  template <typename F>
    requires(!std::is_convertible_v<F, MapFn> && !std::is_same_v<std::decay_t<F>, MapFunction>)
  Dataset map(F&& fn, MapOptions options = {}) const;
  template <typename F>
    requires(!std::is_convertible_v<F, MapFn> && !std::is_same_v<std::decay_t<F>, MapFunction>)
  Dataset map(F&& fn, int num_parallel_calls, bool deterministic = true) const {
    return map(std::forward<F>(fn), MapOptions{.num_parallel_calls = num_parallel_calls, .deterministic = deterministic});
  }
  /// Keeps the elements for which `predicate` is true.
  Dataset filter(Predicate predicate) const;
  /// Uniformly shuffles through a buffer of `buffer_size` elements (tf.data's algorithm: a
  /// random buffer slot is emitted and refilled from the input). With a seed the order is
  /// reproducible; reshuffle_each_iteration mixes the epoch (repeat count or iterator(epoch))
  /// into the seed. Directly after a stateless map, shuffles the map's input and maps after.
  /// Directly after from_tensor_slices, buffers row indices and makes the rows it emits (the
  /// same stream; a buffer of 8-byte indices stays in the caches).
  Dataset shuffle(int64_t buffer_size, std::optional<uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  /// Repeats the input `count` times; -1 repeats forever. An input that is empty ends it.
  /// Directly after a stateless map, repeats the map's input and maps after.
  Dataset repeat(int64_t count = -1) const;
  /// Stacks `batch_size` consecutive elements along a new leading axis (one memcpy per
  /// component row). The last, smaller batch is kept unless drop_remainder. Directly after a
  /// parallel stateless map, runs fused with it as one stage, "map_and_batch".
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  /// Splits each element along its leading axis (the inverse of batch).
  Dataset unbatch() const;
  /// Produces up to `buffer_size` elements ahead on a background thread; kAutotune grows the
  /// buffer as autotune.h explains. After a stage that runs on workers of its own (a parallel
  /// map, map_and_batch), adds its buffer to that stage's instead of running a thread.
  Dataset prefetch(int buffer_size = kAutotune) const;
  /// tf.data's prefetch_to_device (the TPU infeed): the elements go to `device`'s memory, each
  /// copied on its transfer stream `buffer_size` elements ahead of the consumer, so the copy of
  /// the next batch overlaps the step on this one (the host pipeline also runs `buffer_size`
  /// elements ahead on a thread, as prefetch does). The last step of a recipe: its elements are
  /// device buffers, which Model::fit/evaluate/predict take, and a custom loop reads with
  /// trace::DeviceIterator (kiln/trace/device_iterator.h); a host iterator() throws DataError.
  /// On cpu:0 the buffers are the host batches themselves: nothing is copied.
  Dataset prefetch_to_device(runtime::Device& device, int buffer_size = 2) const;
  /// The first `count` elements (-1: all).
  Dataset take(int64_t count) const;
  /// All but the first `count` elements (-1: skips them all, as in tf.data).
  Dataset skip(int64_t count) const;
  /// Every num_shards-th element starting at `index` (one worker's share).
  Dataset shard(int64_t num_shards, int64_t index) const;
  /// Keeps the elements in memory after the first complete pass; later iterators read them
  /// from there. The cache belongs to this recipe (copies of it share the cache).
  Dataset cache() const;
  /// Maps each element to a dataset and mixes them: `cycle_length` of them open at once,
  /// `block_length` consecutive elements from each in turn. num_parallel_calls > 0 or
  /// kAutotune reads the open datasets ahead on background threads, keeping the same order.
  Dataset interleave(InterleaveFn fn, int cycle_length = kAutotune, int block_length = 1,
                     int num_parallel_calls = 0) const;

  /// How many elements an iterator yields: a count, kInfiniteCardinality (-1, after repeat())
  /// or kUnknownCardinality (-2: a generator, a filter, a file's records), as tf.data's.
  int64_t cardinality() const { return node_->cardinality(); }
  /// The component shapes of the largest element (batches at their batch_size), known from the
  /// recipe without running the pipeline (tf.data's element_spec), or nullopt. Map functions
  /// are applied to a copy of one source row to learn their output; readers and generators
  /// are unknown.
  std::optional<std::vector<Shape>> element_spec() const { return node_->element_spec(); }

  /// The running pipeline. `epoch` is mixed into reshuffling shuffles' seeds, so a trainer
  /// that makes one iterator per epoch passes the epoch index.
  Iterator iterator(uint64_t epoch = 0) const { return Iterator(node_, epoch); }

  /// Wraps a recipe step (transforms and readers build datasets this way).
  explicit Dataset(NodePtr node) : node_(std::move(node)) {}
  const NodePtr& node() const { return node_; }

 private:
  NodePtr node_;
};

}  // namespace kiln::data

namespace kiln::data {

template <typename F>
  requires(!std::is_convertible_v<F, MapFn> && !std::is_same_v<std::decay_t<F>, MapFunction>)
Dataset Dataset::map(F&& fn, MapOptions options) const {
  return map(make_map_function(std::forward<F>(fn), options.name), options);
}

}  // namespace kiln::data
