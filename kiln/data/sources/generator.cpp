// from_generator: one fresh generator per iterator. A generator's own state is opaque, so the
// saved position is the count of elements produced; restore replays that many from a fresh
// generator (exact when the generator is deterministic, as tf.data cannot promise either).
#include "kiln/data/sources/generator.h"

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

class GeneratorNode : public DatasetNode {
 public:
  explicit GeneratorNode(GeneratorFactory factory)
      : DatasetNode("from_generator", {}), factory_(std::move(factory)) {}

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;
  const GeneratorFactory& factory() const { return factory_; }

 private:
  GeneratorFactory factory_;
};

class GeneratorIterator : public IteratorBase {
 public:
  GeneratorIterator(const GeneratorNode& node, const IteratorContext& ctx)
      : IteratorBase(node, ctx), node_(node) {}

 protected:
  std::optional<Element> get_next() override {
    if (done_) return std::nullopt;
    std::optional<Element> e = pull();
    if (e)
      ++produced_;
    else
      done_ = true;
    return e;
  }
  void save_state(StateWriter& w) override {
    w.write_i64(produced_);
    w.write_bool(done_);
  }
  void restore_state(StateReader& r) override {
    const int64_t produced = r.read_i64();
    done_ = r.read_bool();
    generator_ = nullptr;
    for (produced_ = 0; produced_ < produced; ++produced_) {
      if (!pull())
        KILN_THROW(DataError, "[from_generator] cannot restore: the saved position is element ",
                   produced, ", but a fresh generator ended after ", produced_,
                   ". Hint: restoring a generator replays it, so it must yield the same elements "
                   "every time.");
    }
  }

 private:
  std::optional<Element> pull() {
    try {
      if (!generator_) generator_ = node_.factory()();
      return generator_();
    } catch (...) {
      rethrow_as_data_error(stage(), "the generator failed", ErrorSource::kUserFunction);
    }
  }

  const GeneratorNode& node_;
  Generator generator_;
  int64_t produced_ = 0;
  bool done_ = false;
};

IteratorPtr GeneratorNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<GeneratorIterator>(*this, ctx);
}

}  // namespace

NodePtr make_generator_node(GeneratorFactory factory) {
  if (!factory) KILN_THROW(ValueError, "[from_generator] the generator factory is empty.");
  return std::make_shared<GeneratorNode>(std::move(factory));
}

}  // namespace kiln::data
