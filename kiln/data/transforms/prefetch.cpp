// prefetch: a one-thread ParallelRunner with no function. Its saved state is the input's
// position plus the queued elements, which is where an uninterrupted consumer would be.
#include "kiln/data/transforms/prefetch.h"

#include "kiln/core/check.h"
#include "kiln/data/transforms/parallel_runner.h"

namespace kiln::data {
namespace {

/// Autotuned prefetch starts here and grows (autotune.h).
constexpr int kInitialAutotuneBuffer = 2;

class PrefetchNode : public DatasetNode {
 public:
  PrefetchNode(NodePtr input, int buffer_size)
      : DatasetNode("prefetch", {input}), buffer_size_(buffer_size) {}

  IteratorPtr make_iterator(const IteratorContext& ctx) const override;

 private:
  int buffer_size_;
};

IteratorPtr PrefetchNode::make_iterator(const IteratorContext& ctx) const {
  const bool autotune = buffer_size_ == kAutotune;
  return std::make_unique<RunnerIterator>(
      *this, ctx, /*fn=*/nullptr,
      RunnerOptions{.parallelism = 1,
                    .buffer_size = autotune ? kInitialAutotuneBuffer : buffer_size_,
                    .autotune_buffer = autotune});
}

}  // namespace

NodePtr make_prefetch_node(NodePtr input, int buffer_size) {
  if (buffer_size <= 0 && buffer_size != kAutotune)
    KILN_THROW(ValueError, "[prefetch] buffer_size must be positive or kAutotune (-1), received ",
               buffer_size, ".");
  return std::make_shared<PrefetchNode>(std::move(input), buffer_size);
}

}  // namespace kiln::data
