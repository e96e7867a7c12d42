// shuffle: tf.data's algorithm. Fill a buffer of buffer_size elements; each next() emits a
// uniformly chosen slot and refills it from the input. The position is the RNG state, the
// buffer contents and the input's position. Over a RowIndexSource (from_tensor_slices) the
// buffer holds row indices and the emitted rows are made from them: the same stream.
#include "kiln/data/transforms/shuffle.h"

#include <algorithm>
#include <random>
#include <type_traits>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

/// How many picks ahead shuffle starts fetching a slot: a DRAM latency covers a few moves.
constexpr size_t kLookahead = 16;

class ShuffleNode : public DatasetNode {
 public:
  ShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : DatasetNode("shuffle", {input}), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}
  bool keeps_elements() const override { return true; }

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;

  int64_t buffer_size() const { return buffer_size_; }
  int64_t cardinality() const override { return input_cardinality(); }
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
      : UnaryIterator(node, ctx),
        buffer_size_(node.buffer_size()),
        rng_(node.seed_for(ctx.epoch)),
        rows_(dynamic_cast<RowIndexSource*>(input_.get())) {
    if (counters() != nullptr) counters()->buffer_size = static_cast<int>(buffer_size_);
  }

 protected:
  std::optional<Element> get_next() override { return next_one_of_many(); }

  void get_next_many(std::vector<Element>& out, size_t n) override {
    if (rows_ == nullptr) {
      shuffle_many(buffer_, refills_, out, n, [&](std::vector<Element>& to, size_t k) { return input_->next_many(to, k); });
      return;
    }
    picked_.clear();
    try {
      shuffle_many(index_buffer_, index_refills_, picked_, n,
                   [&](std::vector<int64_t>& to, size_t k) { return rows_->next_row_indices(to, k); });
    } catch (...) {
      rows_->rows_at(picked_, out);
      throw;
    }
    rows_->rows_at(picked_, out);
  }

  void save_state(StateWriter& w) override {
    w.write_u64(rng_.state());
    w.write_bool(input_done_);
    w.write_bool(rows_ != nullptr);
    if (rows_ == nullptr) {
      w.write_u64(buffer_.size());
      for (const Element& e : buffer_) w.write_element(e);
    } else {
      w.write_u64(index_buffer_.size());
      for (int64_t i : index_buffer_) w.write_i64(i);
    }
    input_->save(w);
  }
  void restore_state(StateReader& r) override {
    rng_.set_state(r.read_u64());
    input_done_ = r.read_bool();
    if (r.read_bool() != (rows_ != nullptr))
      KILN_THROW(DataError, "[shuffle] the saved state buffers ", rows_ ? "elements" : "row indices",
                 " but this recipe's shuffle buffers ", rows_ ? "row indices" : "elements",
                 ": the state comes from another recipe.");
    buffer_.clear();
    index_buffer_.clear();
    const uint64_t n = r.read_u64();
    for (uint64_t i = 0; i < n; ++i) {
      if (rows_ == nullptr) {
        buffer_.push_back(r.read_element());
      } else {
        index_buffer_.push_back(r.read_i64());
      }
    }
    input_->restore(r);
  }

 private:
  // tf.data's algorithm for n elements at once, over elements or row indices: the n refills
  // are pulled from the input first (the same elements in the same order as one at a time),
  // so the slots the n picks will emit are known up front and can be fetched ahead of the
  // moves (an element buffer is far larger than the caches: the seed's would hold 31 MB of
  // images, so every emitted element would be a miss).
  template <typename T, typename Pull>
  void shuffle_many(std::vector<T>& buffer, std::vector<T>& refills, std::vector<T>& out, size_t n, Pull pull) {
    if (!input_done_ && static_cast<int64_t>(buffer.size()) < buffer_size_) {
      if (buffer.empty()) buffer.reserve(static_cast<size_t>(buffer_size_));
      const size_t want = static_cast<size_t>(buffer_size_) - buffer.size();
      if (pull(buffer, want) < want) input_done_ = true;
    }
    refills.clear();
    std::exception_ptr upstream;
    if (!input_done_) {
      try {
        if (pull(refills, n) < n) input_done_ = true;
      } catch (...) {
        upstream = std::current_exception();  // raised after the picks its refills allow
      }
    }
    // Pick k empties a slot that refill k fills; past the refills each pick shrinks the
    // buffer by one. A failed refill stops the picks before the pick that needed it.
    const size_t size = buffer.size();
    const size_t refilled = refills.size();
    size_t picks_n = upstream ? refilled : std::min(n, refilled + size);
    picks_.resize(picks_n);
    for (size_t k = 0; k < picks_n; ++k)
      picks_[k] = static_cast<size_t>(rng_.below(k < refilled ? size : size - (k - refilled)));
    // Emitting touches only the slots (moves); the consumer fetches the bytes.
    // An index buffer stays in the caches: only element buffers are fetched ahead.
    auto prefetch_slot = [&](size_t i) {
      if constexpr (std::is_same_v<T, Element>)
        if (i < buffer.size()) prefetch_bytes(&buffer[i], sizeof(T));
    };
    for (size_t k = 0; k < std::min(picks_n, kLookahead); ++k) prefetch_slot(picks_[k]);
    for (size_t k = 0; k < picks_n; ++k) {
      if (k + kLookahead < picks_n) prefetch_slot(picks_[k + kLookahead]);
      T& slot = buffer[picks_[k]];
      out.push_back(std::move(slot));
      if (k < refilled) {
        slot = std::move(refills[k]);
      } else {
        slot = std::move(buffer.back());
        buffer.pop_back();
      }
    }
    if (upstream) std::rethrow_exception(upstream);
  }

  int64_t buffer_size_;
  SplitMix64 rng_;
  RowIndexSource* rows_;  // the input, when it makes rows from indices; null otherwise
  bool input_done_ = false;
  std::vector<Element> buffer_;  // without rows_
  std::vector<Element> refills_;
  std::vector<int64_t> index_buffer_;  // with rows_
  std::vector<int64_t> index_refills_;
  std::vector<int64_t> picked_;
  std::vector<size_t> picks_;  // scratch of shuffle_many
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
