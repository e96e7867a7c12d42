// map: inline for num_parallel_calls == 0, otherwise a ParallelRunner over the input. The
// parallel form's saved state is the input's position plus the finished results not yet
// handed out, so a restore replays exactly what the consumer had not seen.
#include "kiln/data/transforms/map.h"

#include "kiln/core/check.h"
#include "kiln/data/transforms/parallel_runner.h"

namespace kiln::data {
namespace {

class MapNode : public DatasetNode {
 public:
  MapNode(NodePtr input, MapFn fn, int num_parallel_calls, bool deterministic)
      : DatasetNode("map", {input}),
        fn_(std::move(fn)),
        num_parallel_calls_(num_parallel_calls),
        deterministic_(deterministic) {}

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;

  const MapFn& fn() const { return fn_; }

 private:
  MapFn fn_;
  int num_parallel_calls_;
  bool deterministic_;
};

class MapIterator : public IteratorBase {
 public:
  MapIterator(const MapNode& node, const IteratorContext& ctx)
      : IteratorBase(node, ctx), node_(node), input_(node.inputs()[0]->make_iterator(ctx)) {}

 protected:
  std::optional<Element> get_next() override {
    std::optional<Element> e = input_->next();
    if (!e) return std::nullopt;
    try {
      return node_.fn()(std::move(*e));
    } catch (...) {
      rethrow_as_data_error(stage(), "the function failed", ErrorSource::kUserFunction);
    }
  }
  void save_state(StateWriter& w) override { input_->save(w); }
  void restore_state(StateReader& r) override { input_->restore(r); }

 private:
  const MapNode& node_;
  IteratorPtr input_;
};

IteratorPtr MapNode::make_iterator(const IteratorContext& ctx) const {
  if (num_parallel_calls_ == 0) return std::make_unique<MapIterator>(*this, ctx);
  const int threads = resolve_parallelism(num_parallel_calls_, "map");
  return std::make_unique<RunnerIterator>(
      *this, ctx, fn_,
      RunnerOptions{.parallelism = threads,
                    .buffer_size = 2 * threads,
                    .deterministic = deterministic_,
                    .buffer_follows_chunk = true,
                    .parallelism_autotuned = num_parallel_calls_ == kAutotune});
}

}  // namespace

NodePtr make_map_node(NodePtr input, MapFn fn, int num_parallel_calls, bool deterministic) {
  if (!fn) KILN_THROW(ValueError, "[map] the function is empty.");
  if (num_parallel_calls < 0 && num_parallel_calls != kAutotune)
    KILN_THROW(ValueError, "[map] num_parallel_calls must be 0 (inline), positive or kAutotune (-1), "
               "received ", num_parallel_calls, ".");
  return std::make_shared<MapNode>(std::move(input), std::move(fn), num_parallel_calls, deterministic);
}

}  // namespace kiln::data
