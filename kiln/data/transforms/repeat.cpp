// repeat: rebuilds its input iterator for every repetition, passing a distinct epoch so
// reshuffling shuffles upstream give each repetition a new order. Position = repetition index,
// elements seen in it, and the input's position.
#include "kiln/data/transforms/repeat.h"

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

class RepeatNode : public DatasetNode {
 public:
  RepeatNode(NodePtr input, int64_t count) : DatasetNode("repeat", {input}), count_(count) {}
  bool keeps_elements() const override { return true; }

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;
  int64_t count() const { return count_; }
  int64_t cardinality() const override {
    const int64_t n = input_cardinality();
    if (n == 0 || count_ == 0) return 0;
    if (n == kUnknownCardinality) return n;
    if (count_ < 0 || n == kInfiniteCardinality) return kInfiniteCardinality;
    return n * count_;
  }

 private:
  int64_t count_;
};

class RepeatIterator : public IteratorBase {
 public:
  RepeatIterator(const RepeatNode& node, const IteratorContext& ctx)
      : IteratorBase(node, ctx), node_(node) {
    done_ = node.count() == 0;
    if (!done_) open();
  }

 protected:
  std::optional<Element> get_next() override { return next_one_of_many(); }

  void get_next_many(std::vector<Element>& out, size_t n) override {
    while (!done_ && n > 0) {
      const size_t before = out.size();
      try {
        input_->next_many(out, n);
      } catch (...) {
        seen_in_repetition_ += static_cast<int64_t>(out.size() - before);
        throw;
      }
      const size_t got = out.size() - before;
      seen_in_repetition_ += static_cast<int64_t>(got);
      n -= got;
      if (n == 0) return;
      // The input ended. An empty input would make repeat() spin forever; end instead, as
      // tf.data does.
      if (seen_in_repetition_ == 0 || (node_.count() > 0 && repetition_ + 1 >= node_.count())) {
        done_ = true;
        return;
      }
      ++repetition_;
      open();
    }
  }

  void save_state(StateWriter& w) override {
    w.write_i64(repetition_);
    w.write_i64(seen_in_repetition_);
    w.write_bool(done_);
    if (!done_) input_->save(w);
  }
  void restore_state(StateReader& r) override {
    repetition_ = r.read_i64();
    seen_in_repetition_ = r.read_i64();
    done_ = r.read_bool();
    if (!done_) {
      const int64_t seen = seen_in_repetition_;
      open();
      seen_in_repetition_ = seen;
      input_->restore(r);
    }
  }

 private:
  void open() {
    IteratorContext ctx = context();
    ctx.epoch = (context().epoch << 32) + static_cast<uint64_t>(repetition_);
    input_.reset();  // join the old input's threads before the new one starts
    input_ = node_.inputs()[0]->make_iterator(ctx);
    seen_in_repetition_ = 0;
  }

  const RepeatNode& node_;
  IteratorPtr input_;
  int64_t repetition_ = 0;
  int64_t seen_in_repetition_ = 0;
  bool done_ = false;
};

IteratorPtr RepeatNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<RepeatIterator>(*this, ctx);
}

}  // namespace

NodePtr make_repeat_node(NodePtr input, int64_t count) {
  if (count < -1)
    KILN_THROW(ValueError, "[repeat] count must be -1 (forever) or >= 0, received ", count, ".");
  return std::make_shared<RepeatNode>(std::move(input), count);
}

}  // namespace kiln::data
