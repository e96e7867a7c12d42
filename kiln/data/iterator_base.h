// IteratorBase and DatasetNode: the two halves of every pipeline stage. A DatasetNode is the
// immutable recipe step; make_iterator() builds its running IteratorBase, which pulls from the
// iterators of the node's inputs, counts its work for stats, and saves/restores its position.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/trace_recorder.h"
#include "kiln/data/element.h"
#include "kiln/data/iterator_state.h"
#include "kiln/data/pipeline_stats.h"

namespace kiln::data {

/// What an iterator is built with.
struct IteratorContext {
  /// Epoch index: shuffle stages with reshuffle_each_iteration mix it into their seed, and
  /// repeat passes epoch * 2^32 + repetition to its input.
  uint64_t epoch = 0;
  /// Where stages register their counters; null disables timing (interleave sub-pipelines).
  StatsRegistry* stats = nullptr;
};

class DatasetNode;

/// A running stage. Not thread-safe: one thread calls next(), save() and restore().
class IteratorBase {
 public:
  IteratorBase(const DatasetNode& node, const IteratorContext& ctx);
  virtual ~IteratorBase() = default;
  IteratorBase(const IteratorBase&) = delete;
  IteratorBase& operator=(const IteratorBase&) = delete;

  /// The next element, or nullopt at the end. Failures are DataErrors naming the stage.
  std::optional<Element> next() {
    TraceScope trace("input", stage_);  // a no-op unless a TraceSession is on
    if (counters_ == nullptr) return get_next();
    const int64_t t0 = stage_clock_ticks();
    std::optional<Element> e = get_next();
    counters_->inclusive_ticks.fetch_add(stage_clock_ticks() - t0, std::memory_order_relaxed);
    if (e) counters_->elements.fetch_add(1, std::memory_order_relaxed);
    return e;
  }

  /// Appends up to `n` elements to `out` and returns how many; fewer than `n` only at the
  /// end. The bulk form of next() (batch, shuffle and parallel runners pull this way): one
  /// virtual call and one clock read per stage per pull instead of per element. A failure
  /// throws as next() would, leaving the elements produced before the failing one appended to
  /// `out`; the next call goes on after the failing element, as next() does.
  size_t next_many(std::vector<Element>& out, size_t n) {
    TraceScope trace("input", stage_);
    const size_t before = out.size();
    if (counters_ == nullptr) {
      get_next_many(out, n);
      return out.size() - before;
    }
    const int64_t t0 = stage_clock_ticks();
    try {
      get_next_many(out, n);
    } catch (...) {
      count_many(t0, out.size() - before);
      throw;
    }
    count_many(t0, out.size() - before);
    return out.size() - before;
  }

  /// Writes this stage's tag and position (inputs included) to `w`.
  void save(StateWriter& w) {
    w.write_tag(stage_);
    save_state(w);
  }
  /// Restores a position saved by an iterator of the same recipe; call before next().
  void restore(StateReader& r) {
    r.expect_tag(stage_);
    restore_state(r);
  }
  const std::string& stage() const { return stage_; }

 protected:
  virtual std::optional<Element> get_next() = 0;
  /// next_many without the stats; this default loops over get_next(). Stages on the hot path
  /// override it (and may implement get_next() as next_one_of_many()).
  virtual void get_next_many(std::vector<Element>& out, size_t n);
  /// get_next() through get_next_many(), for stages whose bulk form is the real one.
  std::optional<Element> next_one_of_many();
  virtual void save_state(StateWriter& w) = 0;
  virtual void restore_state(StateReader& r) = 0;

  StageCounters* counters() const { return counters_; }
  const IteratorContext& context() const { return ctx_; }
  /// Adds the time since `t0` (stage_clock_ticks) and `elements` to this stage's counters,
  /// for work done outside next() and next_many() (RowIndexSource's calls).
  void count_many(int64_t t0, size_t elements) {
    if (counters_ == nullptr) return;
    counters_->inclusive_ticks.fetch_add(stage_clock_ticks() - t0, std::memory_order_relaxed);
    counters_->elements.fetch_add(static_cast<int64_t>(elements), std::memory_order_relaxed);
  }

 private:
  std::string stage_;
  IteratorContext ctx_;
  StageCounters* counters_ = nullptr;
  std::vector<Element> one_;  // next_one_of_many's scratch
};

using IteratorPtr = std::unique_ptr<IteratorBase>;

/// A stage whose elements are rows it can make on demand from an index (from_tensor_slices).
/// A shuffle reading such a stage buffers 8-byte row indices instead of elements and makes
/// the rows it emits: the same stream, with a buffer that fits in the caches.
class RowIndexSource {
 public:
  /// Appends up to `n` next row indices to `out` and returns how many; fewer only at the end.
  /// The position advances as if those rows had been pulled.
  virtual size_t next_row_indices(std::vector<int64_t>& out, size_t n) = 0;
  /// Appends the rows at `indices` (each one returned by next_row_indices) to `out`.
  virtual void rows_at(const std::vector<int64_t>& indices, std::vector<Element>& out) = 0;

 protected:
  ~RowIndexSource() = default;
};

/// A stage with a single input, built from the node's first input.
class UnaryIterator : public IteratorBase {
 public:
  UnaryIterator(const DatasetNode& node, const IteratorContext& ctx);

 protected:
  IteratorPtr input_;
};

/// One immutable step of a Dataset recipe.
/// tf.data's values: tf.data.INFINITE_CARDINALITY and tf.data.UNKNOWN_CARDINALITY.
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

class DatasetNode : public std::enable_shared_from_this<DatasetNode> {
 public:
  DatasetNode(std::string stage, std::vector<std::shared_ptr<const DatasetNode>> inputs)
      : stage_(std::move(stage)), inputs_(std::move(inputs)) {}
  virtual ~DatasetNode() = default;

  /// Builds the running stage (and, through it, the stages of the inputs).
  virtual IteratorPtr make_iterator(const IteratorContext& ctx) const = 0;

  /// The op name: "map", "batch", ...
  const std::string& stage() const { return stage_; }
  /// How many elements an iterator yields: a count, kInfiniteCardinality or
  /// kUnknownCardinality (tf.data's Dataset.cardinality()). Unknown unless the node knows.
  virtual int64_t cardinality() const { return kUnknownCardinality; }
  /// The first input's cardinality (for nodes that keep the element count).
  int64_t input_cardinality() const { return inputs_.empty() ? kUnknownCardinality : inputs_[0]->cardinality(); }
  /// The component shapes of the largest element (a batch at its batch_size), as far as the
  /// recipe tells without running the pipeline (tf.data's element_spec); nullopt when
  /// unknown. Default: the sample element's shapes.
  virtual std::optional<std::vector<Shape>> element_spec() const;
  /// One element shaped like this node's, made cheaply (a source's first row, a map applied to
  /// its input's sample); nullopt when that would read files, fill buffers or call generators.
  /// Default: the input's, for nodes that keep elements as they are; otherwise nullopt.
  virtual std::optional<Element> sample_element() const;
  /// True for stages that pass elements through unchanged (shuffle, repeat, take, ...).
  virtual bool keeps_elements() const { return false; }
  const std::vector<std::shared_ptr<const DatasetNode>>& inputs() const { return inputs_; }

 private:
  std::string stage_;
  std::vector<std::shared_ptr<const DatasetNode>> inputs_;
};

using NodePtr = std::shared_ptr<const DatasetNode>;

/// Whether a DataError from upstream keeps its message (it already names its stage).
enum class ErrorSource { kUpstream, kUserFunction };

/// The exception in flight as a DataError "[stage] what: original message". Upstream
/// DataErrors pass unchanged; errors of user functions (map, filter, generators) are always
/// wrapped so the message names the stage. For errors carried across threads.
std::exception_ptr capture_as_data_error(const std::string& stage, const std::string& what,
                                         ErrorSource source);
/// Rethrows the exception in flight as capture_as_data_error describes.
[[noreturn]] void rethrow_as_data_error(const std::string& stage, const std::string& what,
                                        ErrorSource source);

}  // namespace kiln::data
