// Iterator: the consumer-facing wrapper that times waits and frames saved state.
#include "kiln/data/iterator.h"

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

constexpr std::string_view kStateMagic = "kiln.data.Iterator/1";

}  // namespace

Iterator::Iterator(NodePtr recipe, uint64_t epoch)
    : recipe_(std::move(recipe)), epoch_(epoch), registry_(std::make_unique<StatsRegistry>()) {
  root_ = recipe_->make_iterator({.epoch = epoch_, .stats = registry_.get()});
}

Iterator::~Iterator() = default;
Iterator::Iterator(Iterator&&) noexcept = default;
// Not defaulted: member-wise assignment would replace registry_ (declared first) while the old
// root_'s workers still count into it, a use-after-free write (fit reassigns its iterator each
// epoch and on resume). The old stages, threads joined, go first.
Iterator& Iterator::operator=(Iterator&& other) noexcept {
  if (this == &other) return *this;
  root_.reset();
  recipe_ = std::move(other.recipe_);
  epoch_ = other.epoch_;
  registry_ = std::move(other.registry_);
  root_ = std::move(other.root_);
  started_ = other.started_;
  wait_ns_ = other.wait_ns_;
  consumed_ = other.consumed_;
  return *this;
}

std::optional<Element> Iterator::next() {
  KILN_CHECK(root_ != nullptr, "next() on a moved-from Iterator");
  const auto t0 = std::chrono::steady_clock::now();
  if (!started_) started_ = t0;
  std::optional<Element> e = root_->next();
  wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now() - t0).count();
  if (e) ++consumed_;
  return e;
}

std::vector<uint8_t> Iterator::save() {
  KILN_CHECK(root_ != nullptr, "save() on a moved-from Iterator");
  StateWriter w;
  w.write_string(kStateMagic);
  w.write_u64(epoch_);
  root_->save(w);
  return w.take();
}

void Iterator::restore(std::span<const uint8_t> state) {
  StateReader r(state);
  if (r.read_string() != kStateMagic)
    KILN_THROW(DataError, "[Iterator::restore] the bytes are not a saved Kiln iterator state. "
               "Hint: pass what Iterator::save() returned.");
  const uint64_t epoch = r.read_u64();
  if (epoch != epoch_)
    KILN_THROW(DataError, "[Iterator::restore] the state was saved at epoch ", epoch,
               ", but this iterator is for epoch ", epoch_,
               ". Hint: create the iterator with dataset.iterator(", epoch, ").");
  // Rebuild from the recipe, so no thread of the old pipeline touches the restored one.
  root_.reset();
  root_ = recipe_->make_iterator({.epoch = epoch_, .stats = registry_.get()});
  root_->restore(r);
  if (!r.at_end())
    KILN_THROW(DataError, "[Iterator::restore] ", state.size() - r.offset(),
               " unexpected bytes after the state of the last stage. Hint: the state was saved "
               "from a different Dataset recipe.");
}

PipelineStats Iterator::stats() const {
  const double wall = started_ ? std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                               *started_).count()
                               : 0.0;
  PipelineStats s = registry_->snapshot(wall);
  s.consumer_wait_seconds = static_cast<double>(wait_ns_) * 1e-9;
  s.consumer_elements = consumed_;
  return s;
}

}  // namespace kiln::data
