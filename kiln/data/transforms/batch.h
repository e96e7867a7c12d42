// batch and unbatch: stack consecutive elements along a new leading axis, and split them again.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "kiln/data/dataset.h"

namespace kiln::data {

class BufferPool;

/// Pulls the rows of one batch at a time and remembers where the input ended (batch and
/// map_and_batch); its state is that flag.
class BatchRows {
 public:
  BatchRows(int64_t batch_size, bool drop_remainder) : batch_size_(batch_size), drop_remainder_(drop_remainder) {}
  /// The next batch's rows into `rows` (cleared first): batch_size of them, or fewer at the end
  /// unless drop_remainder. False when there is no batch left.
  bool pull(IteratorBase& input, std::vector<Element>& rows);
  int64_t batch_size() const { return batch_size_; }
  bool drop_remainder() const { return drop_remainder_; }
  void save(StateWriter& w) const { w.write_bool(done_); }
  void restore(StateReader& r) { done_ = r.read_bool(); }

 private:
  int64_t batch_size_;
  bool drop_remainder_;
  bool done_ = false;
};

/// How many rows ahead batch and map_and_batch fetch a row's bytes and its place in the batch:
/// enough to cover a DRAM latency with the copies of the rows in between.
inline constexpr int64_t kBatchRowLookahead = 4;

/// Stacks rows into batch tensors whose storage comes from a BufferPool (uninitialized: every
/// row is written), so a steady pipeline reuses the storage of batches its consumer dropped.
/// Shared by batch and map_and_batch; thread-safe (the pool is).
class BatchAssembler {
 public:
  /// `stage` names the stage in errors.
  explicit BatchAssembler(std::string stage);
  /// Tensors for `batch_size` rows shaped like `first`'s components.
  Element allocate(std::span<const HostTensor> first, int64_t batch_size) const;
  /// Copies `row` into row `r` of `batch`; DataError when its components or shapes differ
  /// from `first`'s.
  void copy_row(std::span<const HostTensor> first, std::span<const HostTensor> row, int64_t r, Element& batch) const;
  /// Fetches row `r` of `batch` into the caches ahead of its copy_row (batch buffers come back
  /// from the pool cold). A hint only; `r` past the batch is ignored.
  static void prefetch_destination(const Element& batch, int64_t r);
  /// Fetches a row's components (their shapes and bytes) into the caches ahead of their use:
  /// rows are often cold, views into a source a shuffle visits at random. A hint only.
  static void prefetch_source(std::span<const HostTensor> row);
  /// The first `rows` rows of `batch` (a short last batch), as views.
  static Element first_rows(Element batch, int64_t rows);

 private:
  std::string stage_;
  std::shared_ptr<BufferPool> pool_;  // buffers out with consumers keep it alive
};

/// How many batches of `batch_size` `rows` elements make (a cardinality: negative values pass).
/// `element`'s shapes with a leading dim for the largest batch of `input_cardinality` rows
/// (batch_size, or fewer rows when that is all there is): batch's and map_and_batch's
/// element_spec.
std::optional<std::vector<Shape>> batched_spec(const std::optional<std::vector<Shape>>& element, int64_t batch_size,
                                               int64_t input_cardinality);

inline int64_t batches_of(int64_t rows, int64_t batch_size, bool drop_remainder) {
  if (rows < 0) return rows;
  return drop_remainder ? rows / batch_size : (rows + batch_size - 1) / batch_size;
}

/// The recipe step of Dataset::batch (see there).
NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder);
/// The recipe step of Dataset::unbatch (see there).
NodePtr make_unbatch_node(NodePtr input);

}  // namespace kiln::data
