// ParallelRunner: the background engine shared by prefetch and parallel map. Worker threads
// pull elements from the input in order (one puller at a time), apply a function outside any
// lock, and park the results in a bounded buffer the consumer drains in input order (or in
// completion order when not deterministic).
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kiln/data/autotune.h"
#include "kiln/data/iterator_base.h"

namespace kiln::data {

/// How a ParallelRunner works; the owning stage resolves kAutotune before filling it in.
struct RunnerOptions {
  std::string stage;            // names the stage in errors and stats
  int parallelism = 1;          // worker threads
  int buffer_size = 1;          // elements held ahead of the consumer (initial, if autotuned)
  bool autotune_buffer = false; // grow buffer_size as autotune.h explains
  bool deterministic = true;    // deliver in input order
  /// Let the buffer grow with the hand-off size (map); a prefetch keeps its promised size.
  bool buffer_follows_chunk = false;
  bool parallelism_autotuned = false;  // for stats only
};

/// Runs `fn` (identity when empty) over `input` on background threads.
class ParallelRunner {
 public:
  using Fn = std::function<Element(Element)>;

  /// `input` must outlive the runner. Threads start at the first next().
  ParallelRunner(IteratorBase& input, Fn fn, RunnerOptions options, StageCounters* counters);
  /// Stops the workers and joins them; a worker inside input.next() finishes that call first.
  ~ParallelRunner();
  ParallelRunner(const ParallelRunner&) = delete;
  ParallelRunner& operator=(const ParallelRunner&) = delete;

  /// The next result; rethrows a captured error as a DataError.
  std::optional<Element> next();
  /// IteratorBase::next_many's contract over next().
  void next_many(std::vector<Element>& out, size_t n);
  /// Pauses the workers until nothing is in flight, then writes the input's position and
  /// every finished result not yet consumed (in delivery order).
  void save(StateWriter& w);
  /// Restores what save() wrote; only before the first next().
  void restore(StateReader& r);
  /// Holds `elements` more results ahead of the consumer, and with `autotune` grows the buffer
  /// as autotune.h says (a prefetch after this stage lends its buffer instead of running a
  /// thread of its own). Only before the first next().
  void add_buffer(int elements, bool autotune);

 private:
  struct Result {
    std::optional<Element> value;
    std::exception_ptr error;
  };
  struct Slot {
    std::vector<Result> results;
    bool done = false;
  };

  void worker_loop();
  // Consumer side: makes sure local_ holds a result, waiting for one; false at the end.
  bool ensure_local();
  Result pop_local();
  int capacity_locked() const;
  bool ready_locked() const;
  bool room_for_chunk_locked() const;
  bool finished_locked() const { return input_done_ && slots_.empty() && pulling_ == 0; }
  void take_ready_locked();
  // Returns the consumer's popped results to the buffer's free room; true if a worker waits.
  bool sync_pops_locked();
  void publish_sizes_locked();

  IteratorBase& input_;
  Fn fn_;
  RunnerOptions opt_;
  StageCounters* counters_;

  std::mutex input_mu_;           // one puller at a time, so slots follow input order
  bool input_exhausted_ = false;  // guarded by input_mu_

  std::mutex mu_;  // guards everything below
  std::condition_variable space_cv_;  // workers: room in the buffer, or stop
  std::condition_variable ready_cv_;  // consumer: a result is ready, or the end
  std::condition_variable idle_cv_;   // save(): nothing in flight
  std::deque<std::unique_ptr<Slot>> slots_;
  std::vector<std::unique_ptr<Slot>> free_slots_;  // taken slots, for reuse
  int reserved_ = 0;     // elements pulled or being pulled that the consumer has not popped
  int space_waiters_ = 0;  // workers waiting for room
  int pulling_ = 0;      // workers inside a pull
  int in_flight_ = 0;    // slots whose function is still running
  int done_slots_ = 0;   // slots finished but not yet taken
  bool input_done_ = false;
  bool paused_ = false;
  bool cancelled_ = false;
  bool started_ = false;
  BufferTuner buffer_;
  ChunkTuner chunk_;
  std::vector<std::thread> threads_;

  // Consumer side only: results taken from the buffer in one lock, and how many of them were
  // popped since the consumer last returned their room (it does so every sync_every_ pops, so
  // the buffer bound holds within sync_every_ without a lock per element).
  std::vector<Result> local_;  // local_[local_next_..] are not handed out yet
  size_t local_next_ = 0;
  int unsynced_pops_ = 0;
  int sync_every_ = 1;
};

/// A stage whose elements come from a ParallelRunner over its single input (parallel map,
/// prefetch).
class RunnerIterator : public IteratorBase {
 public:
  /// `options.stage` is filled in from the node.
  RunnerIterator(const DatasetNode& node, const IteratorContext& ctx, ParallelRunner::Fn fn,
                 RunnerOptions options);
  /// The same over the iterator `make_input` builds instead of the node's input's (a stage
  /// that first regroups its input's elements, as map_and_batch does). It is called after this
  /// stage registers its stats, so stages stay in data order.
  RunnerIterator(const DatasetNode& node, const IteratorContext& ctx,
                 const std::function<IteratorPtr()>& make_input, ParallelRunner::Fn fn, RunnerOptions options);

 protected:
  std::optional<Element> get_next() override { return runner_->next(); }
  void get_next_many(std::vector<Element>& out, size_t n) override { runner_->next_many(out, n); }
  void save_state(StateWriter& w) override { runner_->save(w); }
  void restore_state(StateReader& r) override { runner_->restore(r); }

 public:
  /// ParallelRunner::add_buffer.
  void add_buffer(int elements, bool autotune) { runner_->add_buffer(elements, autotune); }

 private:
  IteratorPtr input_;                       // declared first: destroyed after the runner
  std::unique_ptr<ParallelRunner> runner_;  // joins its threads before input_ goes away
};

}  // namespace kiln::data
