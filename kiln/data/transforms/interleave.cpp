// interleave: tf.data's order. `cycle_length` slots each hold the iterator of fn(x) for one
// input element x; the cursor takes block_length elements from a slot, then moves to the next
// slot; an exhausted slot is refilled from the input when the cursor reaches it. With
// num_parallel_calls the slot datasets get a prefetch, so open files are read ahead on
// background threads while the order stays the same. Position = the input's position, the
// cursor, and per slot the element x (to rebuild fn(x)) plus its iterator's position.
#include "kiln/data/transforms/interleave.h"

#include <algorithm>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

class InterleaveNode : public DatasetNode {
 public:
  InterleaveNode(NodePtr input, InterleaveFn fn, int cycle_length, int block_length, bool parallel)
      : DatasetNode("interleave", {input}),
        fn_(std::move(fn)),
        cycle_length_(cycle_length),
        block_length_(block_length),
        parallel_(parallel) {}

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;

  /// fn(x) as a recipe, read ahead when parallel.
  NodePtr dataset_for(const Element& x, const std::string& stage) const {
    try {
      Dataset d = fn_(x);
      if (parallel_) d = d.prefetch(std::max(2, block_length_));
      return d.node();
    } catch (...) {
      rethrow_as_data_error(stage, "the function failed", ErrorSource::kUserFunction);
    }
  }
  int cycle_length() const { return cycle_length_; }
  int block_length() const { return block_length_; }

 private:
  InterleaveFn fn_;
  int cycle_length_;
  int block_length_;
  bool parallel_;
};

class InterleaveIterator : public UnaryIterator {
 public:
  InterleaveIterator(const InterleaveNode& node, const IteratorContext& ctx)
      : UnaryIterator(node, ctx), node_(node), slots_(static_cast<size_t>(node.cycle_length())) {
    if (counters() != nullptr) counters()->parallelism = node.cycle_length();
  }

 protected:
  std::optional<Element> get_next() override {
    while (!input_done_ || open_ > 0) {
      Slot& slot = slots_[cursor_];
      if (slot.it) {
        if (std::optional<Element> e = slot.it->next()) {
          if (++in_block_ == node_.block_length()) advance();
          return e;
        }
        slot = Slot{};
        --open_;
        advance();
      } else if (!input_done_) {
        std::optional<Element> x = input_->next();
        if (!x) {
          input_done_ = true;
          continue;
        }
        open(slot, std::move(*x));
      } else {
        advance();
      }
    }
    return std::nullopt;
  }

  void save_state(StateWriter& w) override {
    w.write_bool(input_done_);
    w.write_u64(cursor_);
    w.write_i64(in_block_);
    for (Slot& slot : slots_) {
      w.write_bool(slot.it != nullptr);
      if (!slot.it) continue;
      w.write_element(slot.source);
      slot.it->save(w);
    }
    input_->save(w);
  }
  void restore_state(StateReader& r) override {
    input_done_ = r.read_bool();
    cursor_ = r.read_u64() % slots_.size();
    in_block_ = r.read_i64();
    open_ = 0;
    for (Slot& slot : slots_) {
      slot = Slot{};
      if (!r.read_bool()) continue;
      open(slot, r.read_element());
      slot.it->restore(r);
    }
    input_->restore(r);
  }

 private:
  struct Slot {
    Element source;  // the input element fn was applied to
    NodePtr dataset;  // keeps fn(source) alive while its iterator runs
    IteratorPtr it;
  };

  void open(Slot& slot, Element x) {
    slot.dataset = node_.dataset_for(x, stage());
    slot.source = std::move(x);
    // Slot pipelines are made per element; their stages are not reported separately.
    slot.it = slot.dataset->make_iterator({.epoch = context().epoch, .stats = nullptr});
    ++open_;
  }
  void advance() {
    in_block_ = 0;
    cursor_ = (cursor_ + 1) % slots_.size();
  }

  const InterleaveNode& node_;
  std::vector<Slot> slots_;
  size_t cursor_ = 0;
  int64_t in_block_ = 0;
  int open_ = 0;
  bool input_done_ = false;
};

IteratorPtr InterleaveNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<InterleaveIterator>(*this, ctx);
}

}  // namespace

NodePtr make_interleave_node(NodePtr input, InterleaveFn fn, int cycle_length, int block_length,
                             int num_parallel_calls) {
  if (!fn) KILN_THROW(ValueError, "[interleave] the function is empty.");
  if (block_length <= 0)
    KILN_THROW(ValueError, "[interleave] block_length must be positive, received ", block_length, ".");
  if (num_parallel_calls < 0 && num_parallel_calls != kAutotune)
    KILN_THROW(ValueError, "[interleave] num_parallel_calls must be 0, positive or kAutotune (-1), "
               "received ", num_parallel_calls, ".");
  // AUTOTUNE cycle length: one open dataset per core keeps every core's reader busy.
  const int cycle = cycle_length == kAutotune ? available_cores()
                                              : resolve_parallelism(cycle_length, "interleave");
  return std::make_shared<InterleaveNode>(std::move(input), std::move(fn), cycle, block_length,
                                          num_parallel_calls != 0);
}

}  // namespace kiln::data
