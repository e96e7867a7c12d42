// map: inline for num_parallel_calls == 0, otherwise a ParallelRunner over the input. The
// parallel form's saved state is the input's position plus the finished results not yet
// handed out, so a restore replays exactly what the consumer had not seen; the inline form's is
// the inputs it pulled but has not mapped yet (only after a failure) and the input's position.
#include "kiln/data/transforms/map.h"

#include <utility>

#include "kiln/core/check.h"
#include "kiln/data/transforms/parallel_runner.h"

namespace kiln::data {

std::optional<Element> sample_output(const MapFunction& fn, const DatasetNode& input) {
  std::optional<Element> sample = input.sample_element();
  if (!sample) return std::nullopt;
  Element copy;  // the sample may view the source's rows; a function may write its argument
  for (const HostTensor& c : *sample) copy.push_back(c.clone());
  try {
    return fn.fn(std::move(copy));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

class MapNode : public DatasetNode {
 public:
  MapNode(NodePtr input, MapFunction fn, MapOptions options)
      : DatasetNode("map", {input}), fn_(std::move(fn)), options_(options) {}

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;

  const MapFunction& fn() const { return fn_; }
  int64_t cardinality() const override { return input_cardinality(); }
  std::optional<Element> sample_element() const override { return sample_output(fn_, *inputs()[0]); }
  const MapOptions& options() const { return options_; }

 private:
  MapFunction fn_;
  MapOptions options_;
};

class MapIterator : public IteratorBase {
 public:
  MapIterator(const MapNode& node, const IteratorContext& ctx)
      : IteratorBase(node, ctx), node_(node), input_(node.inputs()[0]->make_iterator(ctx)) {}

 protected:
  std::optional<Element> get_next() override { return next_one_of_many(); }

  // Pulls the inputs in bulk, then maps them one by one. When the function fails, the inputs
  // after the failing one stay pending for the next call; when the input fails, the elements
  // it produced first are mapped and delivered before its error.
  void get_next_many(std::vector<Element>& out, size_t n) override {
    const size_t target = out.size() + n;
    while (out.size() < target) {
      if (next_in_ == in_.size()) {
        if (upstream_error_) std::rethrow_exception(std::exchange(upstream_error_, nullptr));
        in_.clear();
        next_in_ = 0;
        try {
          input_->next_many(in_, target - out.size());
        } catch (...) {
          upstream_error_ = std::current_exception();
        }
        if (in_.empty() && !upstream_error_) return;
        continue;
      }
      Element& e = in_[next_in_++];
      try {
        out.push_back(node_.fn().fn(std::move(e)));
      } catch (...) {
        rethrow_as_data_error(stage(), "the function failed", ErrorSource::kUserFunction);
      }
    }
  }

  void save_state(StateWriter& w) override {
    w.write_u64(in_.size() - next_in_);
    for (size_t i = next_in_; i < in_.size(); ++i) w.write_element(in_[i]);
    w.write_error(upstream_error_);
    input_->save(w);
  }
  void restore_state(StateReader& r) override {
    in_.clear();
    next_in_ = 0;
    const uint64_t pending = r.read_u64();
    for (uint64_t i = 0; i < pending; ++i) in_.push_back(r.read_element());
    upstream_error_ = r.read_error();
    input_->restore(r);
  }

 private:
  const MapNode& node_;
  IteratorPtr input_;
  std::vector<Element> in_;  // inputs pulled; in_[next_in_..] are not mapped yet
  size_t next_in_ = 0;
  std::exception_ptr upstream_error_;  // the input's failure, after the pending inputs
};

IteratorPtr MapNode::make_iterator(const IteratorContext& ctx) const {
  if (options_.num_parallel_calls == 0) return std::make_unique<MapIterator>(*this, ctx);
  const int threads = resolve_parallelism(options_.num_parallel_calls, "map");
  return std::make_unique<RunnerIterator>(
      *this, ctx, fn_.fn,
      RunnerOptions{.parallelism = threads,
                    .buffer_size = 2 * threads,
                    .deterministic = options_.deterministic,
                    .buffer_follows_chunk = true,
                    .parallelism_autotuned = options_.num_parallel_calls == kAutotune});
}

}  // namespace

std::string map_stage_name(const std::string& name) { return name.empty() ? "[map]" : "[map '" + name + "']"; }

void check_map_arity(const std::string& name, size_t arity, std::span<const HostTensor> element) {
  if (element.size() == arity) return;
  KILN_THROW(DataError, map_stage_name(name), " the function takes ", arity, arity == 1 ? " component" : " components",
             " as arguments, but the element ", shapes_string(element), " has ", element.size(), ". Hint: take one "
             "argument per component of the element (from_tensor_slices({x, y}) gives two), or take the whole "
             "data::Element.");
}

NodePtr make_map_node(NodePtr input, MapFunction fn, MapOptions options) {
  if (!fn.fn) KILN_THROW(ValueError, "[map] the function is empty.");
  options.stateless = options.stateless || fn.stateless;
  if (options.num_parallel_calls < 0 && options.num_parallel_calls != kAutotune)
    KILN_THROW(ValueError, "[map] num_parallel_calls must be 0 (inline), positive or kAutotune (-1), "
               "received ", options.num_parallel_calls, ".");
  return std::make_shared<MapNode>(std::move(input), std::move(fn), options);
}

std::optional<StatelessMap> as_stateless_map(const NodePtr& node) {
  const auto* map = dynamic_cast<const MapNode*>(node.get());
  if (map == nullptr || !map->options().stateless) return std::nullopt;
  return StatelessMap{map->inputs()[0], map->fn(), map->options()};
}

NodePtr apply_before_stateless_map(const NodePtr& node, const std::function<NodePtr(NodePtr)>& make_stage) {
  std::optional<StatelessMap> map = as_stateless_map(node);
  if (!map) return make_stage(node);
  return make_map_node(apply_before_stateless_map(map->input, make_stage), map->fn, map->options);
}

}  // namespace kiln::data
