// Dataset map functions written with Kiln ops, as tf.data runs `map(preprocess)`: the function
// is traced once per element shape into a small program, compiled, and run; where the dataset
// batches right after the map (map_and_batch), the program is batched (batching.h) and runs
// once per batch. Including this header lets Dataset::map take a callable of kiln::Tensors:
//
//   ds.map([](Tensor image, Tensor label) {
//     return std::tuple{expand_dims(cast(image, DType::kF32) / 255.0, -1), label};
//   }, {.num_parallel_calls = data::kAutotune, .name = "preprocess"});
//
// A traced map is stateless by construction (it may not read variables), so it runs after a
// shuffle or repeat that follows it and fuses with the batch.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/data/buffer_pool.h"
#include "kiln/data/dataset.h"
#include "kiln/runtime/backend.h"
#include "kiln/trace/tensor.h"

namespace kiln::trace {

/// A map function traced into compiled programs: one per element signature, and one per batch
/// signature when it can be batched. Thread-safe: pipeline workers call it concurrently, each
/// on an executable of its own.
class TracedMap {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  /// Distinct element signatures a function may be traced for before Kiln calls its input
  /// shape dynamic (an error: Kiln compiles static shapes).
  static constexpr int kMaxSignatures = 8;

  /// `name` names the function in messages ("" = "map"); `arity` is its parameter count.
  TracedMap(std::string name, size_t arity, Fn fn, std::shared_ptr<runtime::Backend> backend = nullptr);

  /// The function on one element.
  std::vector<HostTensor> run(std::vector<HostTensor> element);
  /// The function on a batch (every component stacked along a leading axis of the same size),
  /// as one batched program, or row by row where an op has no batching rule (logged once).
  std::vector<HostTensor> run_batched(std::vector<HostTensor> batch);

  /// Number of traces made (programs compiled), for tests.
  int trace_count() const;
  /// Why the batched form runs row by row ("" when it is batched or has not run).
  std::string not_batched_reason() const;

 private:
  struct Programs {
    std::vector<std::unique_ptr<runtime::Executable>> idle;  // one runs on one thread at a time
    std::vector<Shape> outputs;                              // the programs' output shapes
    bool row_by_row = false;                                 // batched signature without a batched program
  };
  std::unique_ptr<ir::Module> trace_element(const std::vector<Shape>& element, const std::string& signature);
  /// Compiles `module` for `key`, recording its output shapes.
  std::unique_ptr<runtime::Executable> compile(const std::string& key, std::unique_ptr<ir::Module> module);
  /// Runs `args` on an idle executable of `key` (compiling one with `make` when none is idle;
  /// nothing, when `make` has no program to give). `pooled` outputs come from the buffer pool.
  std::vector<HostTensor> run_program(const std::string& key, std::vector<HostTensor>& args, bool pooled,
                                      const std::function<std::unique_ptr<runtime::Executable>()>& make);
  void note_signature(const std::string& signature);
  std::string stage() const;

  std::string name_;
  size_t arity_;
  Fn fn_;
  std::shared_ptr<runtime::Backend> backend_;
  mutable std::mutex mutex_;
  std::map<std::string, Programs> programs_;  // key: "element (...)" or "batch (...)"
  std::set<std::string> element_signatures_;
  // Batched outputs (whole batches) are recycled: no allocation or page faults per batch.
  std::shared_ptr<data::BufferPool> pool_;
  int trace_count_ = 0;
  std::string not_batched_;
};

namespace traced_map_detail {
template <size_t N, typename F>
std::vector<Tensor> call(F& fn, const std::vector<Tensor>& in) {
  return data::map_detail::to_values<Tensor>(data::map_detail::call_with<N>(fn, in));
}
}  // namespace traced_map_detail

}  // namespace kiln::trace

namespace kiln::data {

/// Dataset::map of a callable of kiln::Tensors: a TracedMap, batched where map_and_batch runs it.
template <>
struct ComponentMapAdapter<Tensor> {
  template <size_t N, typename F>
  static MapFunction make(F fn, const std::string& name) {
    auto traced = std::make_shared<trace::TracedMap>(
        name, N, [fn = std::move(fn)](const std::vector<Tensor>& in) mutable {
          return trace::traced_map_detail::call<N>(fn, in);
        });
    return MapFunction{
        .fn = [traced](Element e) { return Element(traced->run({e.begin(), e.end()})); },
        .batched = [traced](Element e) { return Element(traced->run_batched({e.begin(), e.end()})); },
        .stateless = true};
  }
};

}  // namespace kiln::data
