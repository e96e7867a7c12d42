// filter: pulls until the predicate accepts; it holds nothing between calls, so its position
// is its input's.
#include "kiln/data/transforms/filter.h"

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

class FilterNode : public DatasetNode {
 public:
  FilterNode(NodePtr input, Predicate predicate)
      : DatasetNode("filter", {input}), predicate_(std::move(predicate)) {}
  bool keeps_elements() const override { return true; }

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;
  const Predicate& predicate() const { return predicate_; }

 private:
  Predicate predicate_;
};

class FilterIterator : public UnaryIterator {
 public:
  FilterIterator(const FilterNode& node, const IteratorContext& ctx)
      : UnaryIterator(node, ctx), node_(node) {}

 protected:
  std::optional<Element> get_next() override {
    while (std::optional<Element> e = input_->next()) {
      bool keep = false;
      try {
        keep = node_.predicate()(*e);
      } catch (...) {
        rethrow_as_data_error(stage(), "the predicate failed", ErrorSource::kUserFunction);
      }
      if (keep) return e;
    }
    return std::nullopt;
  }
  void save_state(StateWriter& w) override { input_->save(w); }
  void restore_state(StateReader& r) override { input_->restore(r); }

 private:
  const FilterNode& node_;
};

IteratorPtr FilterNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<FilterIterator>(*this, ctx);
}

}  // namespace

NodePtr make_filter_node(NodePtr input, Predicate predicate) {
  if (!predicate) KILN_THROW(ValueError, "[filter] the predicate is empty.");
  return std::make_shared<FilterNode>(std::move(input), std::move(predicate));
}

}  // namespace kiln::data
