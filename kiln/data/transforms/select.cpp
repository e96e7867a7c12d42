// take, skip, shard: one iterator that keeps input element i when the rule says so. The three
// share a file because each is a single index rule; their position is the index reached plus
// the input's position.
#include "kiln/data/transforms/select.h"

#include <algorithm>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

enum class Rule { kTake, kSkip, kShard };

const char* rule_name(Rule rule) {
  switch (rule) {
    case Rule::kTake: return "take";
    case Rule::kSkip: return "skip";
    case Rule::kShard: return "shard";
  }
  return "select";
}

class SelectNode : public DatasetNode {
 public:
  SelectNode(NodePtr input, Rule rule, int64_t a, int64_t b)
      : DatasetNode(rule_name(rule), {input}), rule_(rule), a_(a), b_(b) {}
  bool keeps_elements() const override { return true; }

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;

  Rule rule() const { return rule_; }
  int64_t a() const { return a_; }  // take/skip: count; shard: num_shards
  int64_t b() const { return b_; }  // shard: index
  int64_t cardinality() const override {
    const int64_t n = input_cardinality();
    if (n == kUnknownCardinality) return n;
    switch (rule_) {
      case Rule::kTake:
        if (a_ < 0) return n;
        return n == kInfiniteCardinality ? a_ : std::min(n, a_);
      case Rule::kSkip:
        if (n == kInfiniteCardinality) return n;
        return a_ < 0 ? 0 : std::max<int64_t>(0, n - a_);
      case Rule::kShard:
        if (n == kInfiniteCardinality) return n;
        return n / a_ + (b_ < n % a_ ? 1 : 0);
    }
    return kUnknownCardinality;
  }

 private:
  Rule rule_;
  int64_t a_;
  int64_t b_;
};

class SelectIterator : public UnaryIterator {
 public:
  SelectIterator(const SelectNode& node, const IteratorContext& ctx)
      : UnaryIterator(node, ctx), node_(node) {}

 protected:
  std::optional<Element> get_next() override {
    while (true) {
      // take stops pulling at its count, so an infinite input after take() ends.
      if (node_.rule() == Rule::kTake && node_.a() >= 0 && index_ >= node_.a()) return std::nullopt;
      std::optional<Element> e = input_->next();
      if (!e) return std::nullopt;
      const int64_t i = index_++;
      if (keeps(i)) return e;
    }
  }
  void save_state(StateWriter& w) override {
    w.write_i64(index_);
    input_->save(w);
  }
  void restore_state(StateReader& r) override {
    index_ = r.read_i64();
    input_->restore(r);
  }

 private:
  bool keeps(int64_t i) const {
    switch (node_.rule()) {
      case Rule::kTake: return true;
      case Rule::kSkip: return node_.a() >= 0 && i >= node_.a();  // -1 skips everything
      case Rule::kShard: return i % node_.a() == node_.b();
    }
    return true;
  }

  const SelectNode& node_;
  int64_t index_ = 0;
};

IteratorPtr SelectNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<SelectIterator>(*this, ctx);
}

}  // namespace

NodePtr make_take_node(NodePtr input, int64_t count) {
  if (count < -1) KILN_THROW(ValueError, "[take] count must be -1 (all) or >= 0, received ", count, ".");
  return std::make_shared<SelectNode>(std::move(input), Rule::kTake, count, 0);
}

NodePtr make_skip_node(NodePtr input, int64_t count) {
  if (count < -1) KILN_THROW(ValueError, "[skip] count must be -1 (all) or >= 0, received ", count, ".");
  return std::make_shared<SelectNode>(std::move(input), Rule::kSkip, count, 0);
}

NodePtr make_shard_node(NodePtr input, int64_t num_shards, int64_t index) {
  if (num_shards <= 0 || index < 0 || index >= num_shards)
    KILN_THROW(ValueError, "[shard] expected num_shards > 0 and 0 <= index < num_shards, received "
               "num_shards=", num_shards, ", index=", index, ".");
  return std::make_shared<SelectNode>(std::move(input), Rule::kShard, num_shards, index);
}

}  // namespace kiln::data
