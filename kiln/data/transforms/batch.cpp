// batch: copies each element's rows straight into batch tensors (one memcpy per component per
// element), so batching runs at memory speed. The batch tensors come uninitialized from a
// BufferPool (every row is written; a short last batch is a slice of the rows written), so a
// steady pipeline reuses the storage of batches its consumer has dropped instead of
// allocating, zeroing and page-faulting 400 KB per batch. It holds no elements between calls;
// its position is its input's. unbatch: hands out row views of the current batch; its
// position is that batch, the next row, and the input's position.
#include "kiln/data/transforms/batch.h"

#include <algorithm>
#include <cstring>

#include "kiln/core/check.h"
#include "kiln/data/buffer_pool.h"

namespace kiln::data {
std::optional<std::vector<Shape>> batched_spec(const std::optional<std::vector<Shape>>& element, int64_t batch_size,
                                               int64_t input_cardinality) {
  if (!element || input_cardinality == 0) return std::nullopt;
  if (input_cardinality > 0) batch_size = std::min(batch_size, input_cardinality);
  std::vector<Shape> out;
  for (const Shape& s : *element) {
    Dims dims{batch_size};
    dims.insert(dims.end(), s.dims().begin(), s.dims().end());
    out.emplace_back(s.dtype(), std::move(dims));
  }
  return out;
}

namespace {

/// Idle batch buffers a batch stage keeps (all components together): enough to absorb the
/// jitter between producing and dropping batches, at most a few MB for MNIST-sized batches.
constexpr int kMaxIdleBatchBuffers = 16;

}  // namespace

bool BatchRows::pull(IteratorBase& input, std::vector<Element>& rows) {
  rows.clear();
  if (done_) return false;
  const auto n = static_cast<size_t>(batch_size_);
  if (input.next_many(rows, n) < n) done_ = true;
  if (rows.empty() || (rows.size() < n && drop_remainder_)) {
    rows.clear();  // a dropped remainder
    return false;
  }
  return true;
}

BatchAssembler::BatchAssembler(std::string stage)
    : stage_(std::move(stage)), pool_(BufferPool::create(kMaxIdleBatchBuffers)) {}

Element BatchAssembler::allocate(std::span<const HostTensor> first, int64_t batch_size) const {
  Element batch;
  for (const HostTensor& c : first) {
    Dims dims{batch_size};
    dims.insert(dims.end(), c.dims().begin(), c.dims().end());
    Shape shape(c.dtype(), std::move(dims));
    // Strings are objects, not bytes a pool can recycle.
    batch.push_back(c.is_string() ? HostTensor(std::move(shape)) : pool_->acquire(std::move(shape)));
  }
  return batch;
}

void BatchAssembler::copy_row(std::span<const HostTensor> first, std::span<const HostTensor> e, int64_t row,
                              Element& batch) const {
  if (e.size() != first.size())
    KILN_THROW(DataError, "[", stage_, "] element ", row, " of a batch has ", e.size(), " components ",
               shapes_string(e), ", but element 0 has ", first.size(), " ", shapes_string(first), ".");
  for (size_t c = 0; c < e.size(); ++c) {
    if (!(e[c].shape() == first[c].shape()))
      KILN_THROW(DataError, "[", stage_, "] element ", row, " of a batch has component ", c, " of shape ",
                 e[c].shape(), ", but element 0 has ", first[c].shape(),
                 ". Hint: batch needs equal shapes; resize or pad them in a map() first.");
    if (e[c].is_string()) {
      batch[c].copy_elements_from(e[c], row * e[c].num_elements());
      continue;
    }
    const int64_t bytes = e[c].byte_size();
    if (bytes > 0)
      std::memcpy(static_cast<std::byte*>(batch[c].raw_data()) + row * bytes, e[c].raw_data(),
                  static_cast<size_t>(bytes));
  }
}

void BatchAssembler::prefetch_destination(const Element& batch, int64_t r) {
  for (const HostTensor& c : batch) {
    if (r >= c.dims()[0]) return;
    if (c.is_string()) continue;
    const int64_t bytes = c.byte_size() / c.dims()[0];
    prefetch_bytes(static_cast<const std::byte*>(c.raw_data()) + r * bytes, static_cast<size_t>(bytes),
                   /*for_write=*/true);
  }
}

void BatchAssembler::prefetch_source(std::span<const HostTensor> row) {
  for (const HostTensor& c : row) {
    prefetch_bytes(c.dims().data(), c.dims().size() * sizeof(int64_t));  // for the shape check
    if (c.defined() && !c.is_string()) prefetch_bytes(c.raw_data(), static_cast<size_t>(c.byte_size()));
  }
}

Element BatchAssembler::first_rows(Element batch, int64_t rows) {
  if (!batch.empty() && batch[0].dims()[0] == rows) return batch;
  for (HostTensor& c : batch) c = c.slice_rows(0, rows);
  return batch;
}

namespace {

class BatchNode : public DatasetNode {
 public:
  BatchNode(NodePtr input, int64_t batch_size, bool drop_remainder)
      : DatasetNode("batch", {input}), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;
  int64_t batch_size() const { return batch_size_; }
  bool drop_remainder() const { return drop_remainder_; }
  int64_t cardinality() const override { return batches_of(input_cardinality(), batch_size_, drop_remainder_); }
  std::optional<std::vector<Shape>> element_spec() const override {
    if (drop_remainder_ && input_cardinality() >= 0 && input_cardinality() < batch_size_) return std::nullopt;
    return batched_spec(inputs()[0]->element_spec(), batch_size_, input_cardinality());
  }

 private:
  int64_t batch_size_;
  bool drop_remainder_;
};

class BatchIterator : public UnaryIterator {
 public:
  BatchIterator(const BatchNode& node, const IteratorContext& ctx)
      : UnaryIterator(node, ctx), rows_of_(node.batch_size(), node.drop_remainder()), assembler_(stage()) {}

 protected:
  std::optional<Element> get_next() override {
    if (!rows_of_.pull(*input_, rows_)) return std::nullopt;
    const auto rows = static_cast<int64_t>(rows_.size());
    const Element& first = rows_[0];
    Element batch = assembler_.allocate(first, rows_of_.batch_size());
    // The rows' bytes are usually cold (a shuffle buffer is far larger than the caches):
    // fetch a few rows ahead of the copy.
    for (int64_t r = 0; r < std::min(rows, kBatchRowLookahead); ++r) {
      BatchAssembler::prefetch_source({rows_[r].begin(), rows_[r].size()});
      BatchAssembler::prefetch_destination(batch, r);
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (r + kBatchRowLookahead < rows) {
        const Element& ahead = rows_[r + kBatchRowLookahead];
        BatchAssembler::prefetch_source({ahead.begin(), ahead.size()});
      }
      BatchAssembler::prefetch_destination(batch, r + kBatchRowLookahead);
      assembler_.copy_row(first, rows_[r], r, batch);
    }
    rows_.clear();  // drop the rows' storage now, not at the next call
    return BatchAssembler::first_rows(std::move(batch), rows);
  }

  void save_state(StateWriter& w) override {
    rows_of_.save(w);
    input_->save(w);
  }
  void restore_state(StateReader& r) override {
    rows_of_.restore(r);
    input_->restore(r);
  }

 private:
  BatchRows rows_of_;
  BatchAssembler assembler_;
  std::vector<Element> rows_;  // the elements of the batch being built
};

class UnbatchIterator : public UnaryIterator {
 public:
  using UnaryIterator::UnaryIterator;

 protected:
  std::optional<Element> get_next() override {
    while (row_ >= rows_) {
      std::optional<Element> e = input_->next();
      if (!e) return std::nullopt;
      set_current(std::move(*e));
    }
    Element out;
    for (size_t c = 0; c < current_.size(); ++c)
      out.push_back(current_[c].view_at(row_shapes_[c], row_ * row_bytes_[c]));
    ++row_;
    return out;
  }

  void save_state(StateWriter& w) override {
    w.write_element(current_);
    w.write_i64(row_);
    input_->save(w);
  }
  void restore_state(StateReader& r) override {
    set_current(r.read_element());
    row_ = r.read_i64();
    input_->restore(r);
  }

 private:
  void set_current(Element e) {
    rows_ = 0;
    row_ = 0;
    row_shapes_.clear();
    row_bytes_.clear();
    for (size_t c = 0; c < e.size(); ++c) {
      if (e[c].rank() == 0)
        KILN_THROW(DataError, "[", stage(), "] component ", c, " is a scalar ", e[c].shape(),
                   ": unbatch needs a leading axis to split.");
      if (c > 0 && e[c].dims()[0] != rows_)
        KILN_THROW(DataError, "[", stage(), "] components disagree on the leading dimension: ",
                   e.shapes_string(), ".");
      rows_ = e[c].dims()[0];
      row_shapes_.emplace_back(e[c].dtype(), Dims(e[c].dims().begin() + 1, e[c].dims().end()));
      row_bytes_.push_back(row_shapes_.back().byte_size());
    }
    current_ = std::move(e);
  }

  Element current_;
  std::vector<Shape> row_shapes_;
  std::vector<int64_t> row_bytes_;
  int64_t rows_ = 0;
  int64_t row_ = 0;
};

class UnbatchNode : public DatasetNode {
 public:
  explicit UnbatchNode(NodePtr input) : DatasetNode("unbatch", {input}) {}
  IteratorPtr make_iterator(const IteratorContext& ctx) const override {
    return std::make_unique<UnbatchIterator>(*this, ctx);
  }
};

IteratorPtr BatchNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<BatchIterator>(*this, ctx);
}

}  // namespace

NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder) {
  if (batch_size <= 0)
    KILN_THROW(ValueError, "[batch] batch_size must be positive, received ", batch_size, ".");
  return std::make_shared<BatchNode>(std::move(input), batch_size, drop_remainder);
}

NodePtr make_unbatch_node(NodePtr input) { return std::make_shared<UnbatchNode>(std::move(input)); }

}  // namespace kiln::data
