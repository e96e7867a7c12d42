// zip: one element from each input, components concatenated in input order; ends with the
// shortest input. Position = every input's position.
#include "kiln/data/transforms/zip.h"

#include <algorithm>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

class ZipIterator : public IteratorBase {
 public:
  ZipIterator(const DatasetNode& node, const IteratorContext& ctx) : IteratorBase(node, ctx) {
    for (const NodePtr& input : node.inputs()) inputs_.push_back(input->make_iterator(ctx));
  }

 protected:
  std::optional<Element> get_next() override {
    if (done_) return std::nullopt;
    Element out;
    for (IteratorPtr& input : inputs_) {
      std::optional<Element> e = input->next();
      if (!e) {
        done_ = true;
        return std::nullopt;
      }
      out.append(std::move(*e));
    }
    return out;
  }
  void save_state(StateWriter& w) override {
    w.write_bool(done_);
    for (IteratorPtr& input : inputs_) input->save(w);
  }
  void restore_state(StateReader& r) override {
    done_ = r.read_bool();
    for (IteratorPtr& input : inputs_) input->restore(r);
  }

 private:
  std::vector<IteratorPtr> inputs_;
  bool done_ = false;
};

class ZipNode : public DatasetNode {
 public:
  explicit ZipNode(std::vector<NodePtr> inputs) : DatasetNode("zip", std::move(inputs)) {}
  // The shortest input's: unknown if any is, infinite only if all are.
  int64_t cardinality() const override {
    int64_t shortest = kInfiniteCardinality;
    for (const auto& in : inputs()) {
      const int64_t n = in->cardinality();
      if (n == kUnknownCardinality) return n;
      if (n != kInfiniteCardinality) shortest = shortest == kInfiniteCardinality ? n : std::min(shortest, n);
    }
    return shortest;
  }
  IteratorPtr make_iterator(const IteratorContext& ctx) const override {
    return std::make_unique<ZipIterator>(*this, ctx);
  }
};

}  // namespace

NodePtr make_zip_node(std::vector<NodePtr> inputs) {
  if (inputs.empty()) KILN_THROW(ValueError, "[zip] needs at least one dataset.");
  return std::make_shared<ZipNode>(std::move(inputs));
}

}  // namespace kiln::data
