// prefetch: a one-thread ParallelRunner with no function. Its saved state is the input's
// position plus the queued elements, which is where an uninterrupted consumer would be.
// Over a stage that already runs ahead on threads of its own (a parallel map, map_and_batch)
// a prefetch thread would add no overlap, only a hand-off per element and a thread more than
// the cores can run (on 2 cores it cost the seed pipeline a fifth of its rate): there the
// prefetch lends its buffer to that stage and hands its elements on.
#include "kiln/data/transforms/prefetch.h"

#include "kiln/core/check.h"
#include "kiln/data/transforms/parallel_runner.h"

namespace kiln::data {
namespace {

/// Autotuned prefetch starts here and grows (autotune.h).
constexpr int kInitialAutotuneBuffer = 2;

class PrefetchNode : public DatasetNode {
 public:
  PrefetchNode(NodePtr input, int buffer_size)
      : DatasetNode("prefetch", {input}), buffer_size_(buffer_size) {}
  bool keeps_elements() const override { return true; }

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;
  int64_t cardinality() const override { return input_cardinality(); }

 private:
  int buffer_size_;
};

// A prefetch that lent its buffer to its input, a RunnerIterator: it hands elements on.
class LentPrefetchIterator : public IteratorBase {
 public:
  LentPrefetchIterator(const DatasetNode& node, const IteratorContext& ctx, IteratorPtr input, int lent,
                       bool autotune)
      : IteratorBase(node, ctx), input_(std::move(input)) {
    if (counters() != nullptr) {
      counters()->buffer_size = lent;
      counters()->autotuned = autotune;
      counters()->buffer_lent_to_input = true;
    }
  }

 protected:
  std::optional<Element> get_next() override { return input_->next(); }
  void get_next_many(std::vector<Element>& out, size_t n) override { input_->next_many(out, n); }
  void save_state(StateWriter& w) override { input_->save(w); }
  void restore_state(StateReader& r) override { input_->restore(r); }

 private:
  IteratorPtr input_;
};

IteratorPtr PrefetchNode::make_iterator(const IteratorContext& ctx) const {
  const bool autotune = buffer_size_ == kAutotune;
  const int buffer = autotune ? kInitialAutotuneBuffer : buffer_size_;
  // Registered before the input, as every stage is, so the stats stay in data order.
  if (ctx.stats != nullptr) ctx.stats->counters_for(*this);
  IteratorPtr input = inputs()[0]->make_iterator(ctx);
  if (auto* runner = dynamic_cast<RunnerIterator*>(input.get())) {
    runner->add_buffer(buffer, autotune);
    return std::make_unique<LentPrefetchIterator>(*this, ctx, std::move(input), buffer, autotune);
  }
  return std::make_unique<RunnerIterator>(
      *this, ctx, [&] { return std::move(input); }, /*fn=*/nullptr,
      RunnerOptions{.parallelism = 1, .buffer_size = buffer, .autotune_buffer = autotune});
}

}  // namespace

NodePtr make_prefetch_node(NodePtr input, int buffer_size) {
  if (buffer_size <= 0 && buffer_size != kAutotune)
    KILN_THROW(ValueError, "[prefetch] buffer_size must be positive or kAutotune (-1), received ",
               buffer_size, ".");
  return std::make_shared<PrefetchNode>(std::move(input), buffer_size);
}

}  // namespace kiln::data
