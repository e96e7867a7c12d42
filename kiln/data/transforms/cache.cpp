// cache: the recipe node owns a store. An iterator that finds the store complete reads from it;
// otherwise it reads its input, keeps every element, and publishes them when the input ends.
// Elements are shared with the consumer (HostTensors share storage), so they must be treated
// as immutable, as everywhere in a pipeline.
#include "kiln/data/transforms/cache.h"

#include <mutex>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

using Elements = std::vector<Element>;

/// The cached pass, published once and read-only afterwards.
struct CacheStore {
  std::mutex mu;
  std::shared_ptr<const Elements> complete;

  std::shared_ptr<const Elements> get() {
    std::lock_guard lock(mu);
    return complete;
  }
  std::shared_ptr<const Elements> publish(Elements elements) {
    std::lock_guard lock(mu);
    if (!complete) complete = std::make_shared<const Elements>(std::move(elements));
    return complete;
  }
};

class CacheNode : public DatasetNode {
 public:
  explicit CacheNode(NodePtr input)
      : DatasetNode("cache", {input}), store_(std::make_shared<CacheStore>()) {}
  bool keeps_elements() const override { return true; }

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;
  CacheStore& store() const { return *store_; }
  int64_t cardinality() const override { return input_cardinality(); }

 private:
  std::shared_ptr<CacheStore> store_;
};

class CacheIterator : public IteratorBase {
 public:
  CacheIterator(const CacheNode& node, const IteratorContext& ctx)
      : IteratorBase(node, ctx), node_(node), cached_(node.store().get()) {
    if (!cached_) input_ = node_.inputs()[0]->make_iterator(ctx);
  }

 protected:
  std::optional<Element> get_next() override {
    if (cached_) {
      if (index_ >= cached_->size()) return std::nullopt;
      return (*cached_)[index_++];
    }
    if (std::optional<Element> e = input_->next()) {
      filled_.push_back(*e);
      return e;
    }
    finish_filling();
    index_ = cached_->size();
    return std::nullopt;
  }

  void save_state(StateWriter& w) override {
    w.write_bool(cached_ != nullptr);
    if (cached_) {
      w.write_u64(index_);
      return;
    }
    w.write_u64(filled_.size());
    for (const Element& e : filled_) w.write_element(e);
    input_->save(w);
  }
  void restore_state(StateReader& r) override {
    if (r.read_bool()) {
      const uint64_t index = r.read_u64();
      cached_ = node_.store().get();
      if (!cached_) {
        // Saved while reading a cache this process has not built yet: build it now.
        input_ = node_.inputs()[0]->make_iterator(context());
        filled_.clear();
        while (std::optional<Element> e = input_->next()) filled_.push_back(std::move(*e));
        finish_filling();
      }
      index_ = index;
      return;
    }
    cached_ = nullptr;
    if (!input_) input_ = node_.inputs()[0]->make_iterator(context());
    filled_.clear();
    const uint64_t n = r.read_u64();
    for (uint64_t i = 0; i < n; ++i) filled_.push_back(r.read_element());
    input_->restore(r);
  }

 private:
  void finish_filling() {
    cached_ = node_.store().publish(std::move(filled_));
    filled_.clear();
    input_.reset();
  }

  const CacheNode& node_;
  std::shared_ptr<const Elements> cached_;  // set once reading from the store
  IteratorPtr input_;                       // set while filling
  Elements filled_;
  size_t index_ = 0;
};

IteratorPtr CacheNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<CacheIterator>(*this, ctx);
}

}  // namespace

NodePtr make_cache_node(NodePtr input) { return std::make_shared<CacheNode>(std::move(input)); }

}  // namespace kiln::data
