// shuffle: tf.data's algorithm. Fill a buffer of buffer_size elements; each next() emits a
// uniformly chosen slot and refills it from the input. The position is the RNG state, the
// buffer contents and the input's position.
#include "kiln/data/transforms/shuffle.h"

#include <algorithm>
#include <random>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

/// Bytes of each upcoming element's components that shuffle prefetches (see get_next).
constexpr int64_t kPrefetchBytes = 4096;

class ShuffleNode : public DatasetNode {
 public:
  ShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : DatasetNode("shuffle", {input}), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;

  int64_t buffer_size() const { return buffer_size_; }
  /// The seed of an iterator made in `epoch`.
  uint64_t seed_for(uint64_t epoch) const {
    if (!reshuffle_) return seed_;
    SplitMix64 mix(seed_ ^ (epoch * 0xd1b54a32d192ed03ull));
    return mix.next();
  }

 private:
  int64_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_;
};

class ShuffleIterator : public UnaryIterator {
 public:
  ShuffleIterator(const ShuffleNode& node, const IteratorContext& ctx)
      : UnaryIterator(node, ctx), buffer_size_(node.buffer_size()), rng_(node.seed_for(ctx.epoch)) {
    if (counters() != nullptr) counters()->buffer_size = static_cast<int>(buffer_size_);
  }

 protected:
  std::optional<Element> get_next() override {
    if (buffer_.empty() && !input_done_) buffer_.reserve(static_cast<size_t>(buffer_size_));
    while (!input_done_ && static_cast<int64_t>(buffer_.size()) < buffer_size_) {
      std::optional<Element> e = input_->next();
      if (!e) {
        input_done_ = true;
        break;
      }
      buffer_.push_back(std::move(*e));
    }
    if (buffer_.empty()) return std::nullopt;
    const size_t i = static_cast<size_t>(rng_.below(buffer_.size()));
    prefetch_upcoming();
    Element out = std::move(buffer_[i]);
    if (!input_done_) {
      if (std::optional<Element> e = input_->next()) {
        buffer_[i] = std::move(*e);
        return out;
      }
      input_done_ = true;
    }
    buffer_[i] = std::move(buffer_.back());
    buffer_.pop_back();
    return out;
  }

  // The buffer is far larger than the caches (the seed's holds 31 MB of images), so every
  // emitted element is a cache miss. Peek at the slots the next two calls will pick (assuming
  // the buffer stays full; a wrong guess only wastes a prefetch): fetch the second's Element
  // now and the first's bytes, whose Element the previous call fetched. A hint only; the
  // order and the RNG state are unchanged.
  void prefetch_upcoming() const {
#if defined(__GNUC__)
    SplitMix64 peek = rng_;
    const uint64_t n = buffer_.size();
    const Element& next = buffer_[static_cast<size_t>(peek.below(n))];
    __builtin_prefetch(&buffer_[static_cast<size_t>(peek.below(n))]);
    for (const HostTensor& t : next) {
      const auto* bytes = static_cast<const char*>(t.raw_data());
      const int64_t size = t.defined() ? t.byte_size() : 0;
      for (int64_t off = 0; off < std::min<int64_t>(size, kPrefetchBytes); off += 64)
        __builtin_prefetch(bytes + off);
    }
#endif
  }

  void save_state(StateWriter& w) override {
    w.write_u64(rng_.state());
    w.write_bool(input_done_);
    w.write_u64(buffer_.size());
    for (const Element& e : buffer_) w.write_element(e);
    input_->save(w);
  }
  void restore_state(StateReader& r) override {
    rng_.set_state(r.read_u64());
    input_done_ = r.read_bool();
    buffer_.clear();
    const uint64_t n = r.read_u64();
    for (uint64_t i = 0; i < n; ++i) buffer_.push_back(r.read_element());
    input_->restore(r);
  }

 private:
  int64_t buffer_size_;
  SplitMix64 rng_;
  std::vector<Element> buffer_;
  bool input_done_ = false;
};

IteratorPtr ShuffleNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ShuffleIterator>(*this, ctx);
}

}  // namespace

NodePtr make_shuffle_node(NodePtr input, int64_t buffer_size, std::optional<uint64_t> seed,
                          bool reshuffle_each_iteration) {
  if (buffer_size <= 0)
    KILN_THROW(ValueError, "[shuffle] buffer_size must be positive, received ", buffer_size,
               ". Hint: a buffer as large as the dataset gives a perfect shuffle.");
  const uint64_t s = seed ? *seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  return std::make_shared<ShuffleNode>(std::move(input), buffer_size, s, reshuffle_each_iteration);
}

}  // namespace kiln::data
