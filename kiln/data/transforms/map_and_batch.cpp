// map_and_batch: rows of a batch travel to a runner worker as one element, the fused function
// maps and stacks them. Its position is the runner's (input position plus finished batches).
#include "kiln/data/transforms/map_and_batch.h"

#include <algorithm>
#include <span>

#include "kiln/core/check.h"
#include "kiln/data/transforms/batch.h"
#include "kiln/data/transforms/map.h"
#include "kiln/data/transforms/parallel_runner.h"

namespace kiln::data {
namespace {

// The rows of one batch as one element: their components in order, then an i64 scalar with
// the number of rows. It runs under the map_and_batch node (its save tag) but is not a stage
// of its own in the stats (null registry); its input is.
class RowGroupIterator : public IteratorBase {
 public:
  RowGroupIterator(const DatasetNode& node, const IteratorContext& ctx, BatchRows rows_of)
      : IteratorBase(node, IteratorContext{.epoch = ctx.epoch, .stats = nullptr}),
        input_(node.inputs()[0]->make_iterator(ctx)),
        rows_of_(rows_of) {}

 protected:
  std::optional<Element> get_next() override {
    if (!rows_of_.pull(*input_, rows_)) return std::nullopt;
    const auto rows = static_cast<int64_t>(rows_.size());
    const size_t k = rows_[0].size();
    Element group;
    for (int64_t r = 0; r < rows; ++r) {
      Element& row = rows_[static_cast<size_t>(r)];
      if (row.size() != k)
        KILN_THROW(DataError, "[map_and_batch] element ", r, " of a batch has ", row.size(), " components ",
                   row.shapes_string(), ", but element 0 has ", k, " ", rows_[0].shapes_string(), ".");
      for (HostTensor& c : row) group.push_back(std::move(c));
    }
    group.push_back(HostTensor::scalar<int64_t>(rows));
    rows_.clear();
    return group;
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
  IteratorPtr input_;
  BatchRows rows_of_;
  std::vector<Element> rows_;
};

class MapAndBatchNode : public DatasetNode {
 public:
  MapAndBatchNode(NodePtr input, MapFunction fn, MapOptions options, int64_t batch_size, bool drop_remainder)
      : DatasetNode("map_and_batch", {std::move(input)}),
        fn_(std::move(fn)),
        options_(options),
        rows_of_(batch_size, drop_remainder) {}

  IteratorPtr make_iterator(const IteratorContext& ctx) const override {
    const int threads = resolve_parallelism(options_.num_parallel_calls, "map");
    auto assembler = std::make_shared<BatchAssembler>(stage());
    ParallelRunner::Fn fused = fn_.batched ? stack_then_map(assembler) : map_then_stack(assembler);
    // A batch is a large element: a small buffer (2 per worker) and hand-offs of a few batches.
    return std::make_unique<RunnerIterator>(
        *this, ctx, [&]() -> IteratorPtr { return std::make_unique<RowGroupIterator>(*this, ctx, rows_of_); },
        std::move(fused),
        RunnerOptions{.parallelism = threads,
                      .buffer_size = 2 * threads,
                      .deterministic = options_.deterministic,
                      .parallelism_autotuned = options_.num_parallel_calls == kAutotune});
  }

  int64_t cardinality() const override {
    return batches_of(input_cardinality(), rows_of_.batch_size(), rows_of_.drop_remainder());
  }
  std::optional<std::vector<Shape>> element_spec() const override {
    std::optional<Element> row = sample_output(fn_, *inputs()[0]);
    if (!row) return std::nullopt;
    std::vector<Shape> shapes;
    for (const HostTensor& c : *row) shapes.push_back(c.shape());
    if (rows_of_.drop_remainder() && input_cardinality() >= 0 && input_cardinality() < rows_of_.batch_size())
      return std::nullopt;
    return batched_spec(shapes, rows_of_.batch_size(), input_cardinality());
  }

 private:
  // Maps the rows one by one and copies every result into the batch while it is hot.
  ParallelRunner::Fn map_then_stack(std::shared_ptr<BatchAssembler> assembler) const {
    return [fn = fn_.fn, assembler, n = rows_of_.batch_size()](Element group) {
      const int64_t rows = group[group.size() - 1].data<int64_t>()[0];
      const size_t k = (group.size() - 1) / static_cast<size_t>(rows);
      // Rows are fetched a few ahead of the function that reads them, as batch does.
      auto prefetch_row = [&](int64_t r) {
        if (r < rows) BatchAssembler::prefetch_source({&group[static_cast<size_t>(r) * k], k});
      };
      for (int64_t r = 0; r < kBatchRowLookahead; ++r) prefetch_row(r);
      Element first, batch;
      for (int64_t r = 0; r < rows; ++r) {
        prefetch_row(r + kBatchRowLookahead);
        Element row;
        for (size_t c = 0; c < k; ++c) row.push_back(std::move(group[static_cast<size_t>(r) * k + c]));
        Element mapped = fn(std::move(row));
        if (r == 0) {
          batch = assembler->allocate(mapped, n);
          for (int64_t d = 1; d <= kBatchRowLookahead; ++d) BatchAssembler::prefetch_destination(batch, d);
          first = std::move(mapped);
          assembler->copy_row(first, first, 0, batch);
        } else {
          BatchAssembler::prefetch_destination(batch, r + kBatchRowLookahead);
          assembler->copy_row(first, mapped, r, batch);  // `mapped` dies hot: the next row reuses it
        }
      }
      return BatchAssembler::first_rows(std::move(batch), rows);
    };
  }

  // Stacks the input rows (as batch does) and maps the whole batch with one call of the
  // function's batched form. A short last batch is stacked at its own size.
  ParallelRunner::Fn stack_then_map(std::shared_ptr<BatchAssembler> assembler) const {
    return [batched = fn_.batched, assembler](Element group) {
      const int64_t rows = group[group.size() - 1].data<int64_t>()[0];
      const size_t k = (group.size() - 1) / static_cast<size_t>(rows);
      auto row_at = [&](int64_t r) { return std::span<HostTensor>(&group[static_cast<size_t>(r) * k], k); };
      for (int64_t r = 0; r < std::min(rows, kBatchRowLookahead); ++r) BatchAssembler::prefetch_source(row_at(r));
      const std::span<const HostTensor> first = row_at(0);
      Element inputs = assembler->allocate(first, rows);
      for (int64_t r = 0; r < rows; ++r) {
        if (r + kBatchRowLookahead < rows) BatchAssembler::prefetch_source(row_at(r + kBatchRowLookahead));
        BatchAssembler::prefetch_destination(inputs, r + kBatchRowLookahead);
        assembler->copy_row(first, row_at(r), r, inputs);
      }
      return batched(std::move(inputs));
    };
  }

  MapFunction fn_;
  MapOptions options_;
  BatchRows rows_of_;  // a fresh one (nothing pulled yet) for each iterator
};

}  // namespace

NodePtr make_map_and_batch_node(NodePtr input, MapFunction fn, MapOptions options, int64_t batch_size,
                                bool drop_remainder) {
  if (batch_size <= 0)
    KILN_THROW(ValueError, "[batch] batch_size must be positive, received ", batch_size, ".");
  KILN_CHECK(options.num_parallel_calls != 0, "map_and_batch runs a parallel map");
  return std::make_shared<MapAndBatchNode>(std::move(input), std::move(fn), options, batch_size, drop_remainder);
}

}  // namespace kiln::data
