// ParallelRunner: ordered parallel pulls, lock-free function calls, bounded buffer, pause for
// save, and cancellation that always joins.
#include "kiln/data/transforms/parallel_runner.h"

#include <algorithm>
#include <chrono>

#include "kiln/core/check.h"

namespace kiln::data {
namespace {

using Clock = std::chrono::steady_clock;

int64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

}  // namespace

ParallelRunner::ParallelRunner(IteratorBase& input, Fn fn, RunnerOptions options,
                               StageCounters* counters)
    : input_(input),
      fn_(std::move(fn)),
      opt_(std::move(options)),
      counters_(counters),
      buffer_(opt_.buffer_size, opt_.autotune_buffer),
      chunk_(opt_.buffer_follows_chunk ? kMaxChunk : std::max(1, opt_.buffer_size / 2)) {
  KILN_CHECK(opt_.parallelism > 0 && opt_.buffer_size > 0);
  std::lock_guard lock(mu_);
  if (counters_ != nullptr) {
    counters_->async = true;
    counters_->autotuned = opt_.autotune_buffer || opt_.parallelism_autotuned;
  }
  publish_sizes_locked();
}

ParallelRunner::~ParallelRunner() {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  space_cv_.notify_all();
  ready_cv_.notify_all();
  idle_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int ParallelRunner::capacity_locked() const {
  if (!opt_.buffer_follows_chunk) return buffer_.size();
  return std::max(buffer_.size(), 2 * opt_.parallelism * chunk_.chunk());
}

void ParallelRunner::publish_sizes_locked() {
  if (counters_ == nullptr) return;
  counters_->parallelism = opt_.parallelism;
  counters_->buffer_size = capacity_locked();
}

bool ParallelRunner::ready_locked() const {
  if (opt_.deterministic) return !slots_.empty() && slots_.front()->done;
  return done_slots_ > 0;
}

void ParallelRunner::take_ready_locked() {
  if (local_next_ == local_.size()) {
    local_.clear();
    local_next_ = 0;
  }
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (!(*it)->done) {
      if (opt_.deterministic) break;
      ++it;
      continue;
    }
    for (Result& r : (*it)->results) local_.push_back(std::move(r));
    --done_slots_;
    // Reuse the slot and its vector's capacity: allocating tens of KB per chunk made glibc
    // consolidate its fast bins on every chunk.
    (*it)->results.clear();
    (*it)->done = false;
    if (static_cast<int>(free_slots_.size()) <= opt_.parallelism) free_slots_.push_back(std::move(*it));
    it = slots_.erase(it);
  }
}

bool ParallelRunner::sync_pops_locked() {
  reserved_ -= unsynced_pops_;
  unsynced_pops_ = 0;
  sync_every_ = std::max(1, capacity_locked() / 4);
  return space_waiters_ > 0 && room_for_chunk_locked();
}

bool ParallelRunner::room_for_chunk_locked() const {
  // A whole chunk, not any room: waking a worker for one or two free slots makes it pull a
  // tiny chunk and sleep again, a context switch every few elements when the consumer is the
  // slower side (on a VM each wake-up of an idle core costs microseconds). A prefetch keeps
  // its promise to refill as soon as any slot is free.
  const int capacity = capacity_locked();
  const int want = opt_.buffer_follows_chunk ? std::min(chunk_.chunk(), capacity) : 1;
  return capacity - reserved_ >= want;
}

void ParallelRunner::worker_loop() {
  std::vector<Element> pulled;  // reused: a chunk's vectors are tens of KB
  while (true) {
    int k = 0;
    std::unique_ptr<Slot> fresh;
    {
      std::unique_lock lock(mu_);
      ++space_waiters_;
      space_cv_.wait(lock, [&] { return cancelled_ || input_done_ || (!paused_ && room_for_chunk_locked()); });
      --space_waiters_;
      if (cancelled_ || input_done_) return;
      k = std::min(chunk_.chunk(), capacity_locked() - reserved_);
      reserved_ += k;
      ++pulling_;
      buffer_.on_produced(reserved_);
      if (free_slots_.empty()) {
        fresh = std::make_unique<Slot>();
      } else {
        fresh = std::move(free_slots_.back());
        free_slots_.pop_back();
      }
    }

    Slot* slot = nullptr;
    const auto t_pull = Clock::now();
    {
      std::lock_guard input_lock(input_mu_);
      pulled.clear();
      std::exception_ptr pull_error;
      if (!input_exhausted_) {
        try {
          if (input_.next_many(pulled, static_cast<size_t>(k)) < static_cast<size_t>(k))
            input_exhausted_ = true;
        } catch (...) {
          // The chunk ends with the error, after the elements pulled before it.
          pull_error = capture_as_data_error(opt_.stage, "its input failed", ErrorSource::kUpstream);
        }
      }
      std::vector<Result>& results = fresh->results;
      for (Element& e : pulled) results.push_back({std::move(e), nullptr});
      if (pull_error) results.push_back({std::nullopt, std::move(pull_error)});
      pulled.clear();
      // Still holding input_mu_, so slots enter the buffer in the order they were pulled.
      std::lock_guard lock(mu_);
      reserved_ -= k - static_cast<int>(results.size());
      --pulling_;
      if (input_exhausted_) input_done_ = true;
      if (!results.empty()) {
        slots_.push_back(std::move(fresh));
        slot = slots_.back().get();
        ++in_flight_;
      }
    }
    if (slot == nullptr) {
      // End of input: wake the consumer and the other workers so they see it.
      ready_cv_.notify_all();
      space_cv_.notify_all();
      idle_cv_.notify_all();
      continue;
    }

    const auto t_fn = Clock::now();
    if (fn_) {
      for (Result& r : slot->results) {
        if (r.error) continue;
        try {
          r.value = fn_(std::move(*r.value));
        } catch (...) {
          r.value.reset();
          r.error = capture_as_data_error(opt_.stage, "the function failed",
                                          ErrorSource::kUserFunction);
        }
      }
    }
    const auto t_end = Clock::now();
    {
      std::lock_guard lock(mu_);
      slot->done = true;
      --in_flight_;
      ++done_slots_;
      chunk_.record(static_cast<int>(slot->results.size()),
                    static_cast<double>(ns_between(t_pull, t_end)) * 1e-9);
      if (counters_ != nullptr) counters_->work_ns += ns_between(t_fn, t_end);
      publish_sizes_locked();
    }
    ready_cv_.notify_one();
    idle_cv_.notify_all();
  }
}

bool ParallelRunner::ensure_local() {
  if (local_next_ == local_.size()) {
    std::unique_lock lock(mu_);
    if (!started_) {
      started_ = true;
      if (!input_done_)
        for (int i = 0; i < opt_.parallelism; ++i) threads_.emplace_back([this] { worker_loop(); });
    }
    bool wake = sync_pops_locked();
    if (!ready_locked() && !finished_locked()) {
      if (wake) space_cv_.notify_all();
      wake = false;
      if (buffer_.on_consumer_wait()) {
        publish_sizes_locked();
        space_cv_.notify_all();
      }
      ready_cv_.wait(lock, [&] { return ready_locked() || finished_locked(); });
    }
    take_ready_locked();
    lock.unlock();
    if (wake) space_cv_.notify_all();
    return local_next_ < local_.size();
  }
  if (unsynced_pops_ >= sync_every_) {
    std::unique_lock lock(mu_);
    const bool wake = sync_pops_locked();
    lock.unlock();
    if (wake) space_cv_.notify_all();
  }
  return true;
}

ParallelRunner::Result ParallelRunner::pop_local() {
  Result r = std::move(local_[local_next_++]);
  ++unsynced_pops_;
  return r;
}

std::optional<Element> ParallelRunner::next() {
  if (!ensure_local()) return std::nullopt;
  Result r = pop_local();
  if (r.error) std::rethrow_exception(r.error);
  return std::move(r.value);
}

void ParallelRunner::next_many(std::vector<Element>& out, size_t n) {
  for (size_t i = 0; i < n && ensure_local(); ++i) {
    Result r = pop_local();
    if (r.error) std::rethrow_exception(r.error);
    out.push_back(std::move(*r.value));
  }
}

void ParallelRunner::save(StateWriter& w) {
  std::unique_lock lock(mu_);
  paused_ = true;
  idle_cv_.wait(lock, [&] { return pulling_ == 0 && in_flight_ == 0; });
  // No worker touches the input or the slots until paused_ is cleared: they are ours.
  sync_pops_locked();
  w.write_bool(input_done_);
  input_.save(w);
  take_ready_locked();
  w.write_u64(local_.size() - local_next_);
  for (size_t i = local_next_; i < local_.size(); ++i) {
    const Result& r = local_[i];
    w.write_error(r.error);
    if (!r.error) w.write_element(*r.value);
  }
  paused_ = false;
  lock.unlock();
  space_cv_.notify_all();
}

void ParallelRunner::restore(StateReader& r) {
  std::lock_guard lock(mu_);
  KILN_CHECK(!started_, "restore() after next() on stage ", opt_.stage);
  input_done_ = r.read_bool();
  input_exhausted_ = input_done_;
  input_.restore(r);
  local_.clear();
  local_next_ = 0;
  unsynced_pops_ = 0;
  const uint64_t n = r.read_u64();
  for (uint64_t i = 0; i < n; ++i) {
    std::exception_ptr error = r.read_error();
    if (error)
      local_.push_back({std::nullopt, std::move(error)});
    else
      local_.push_back({r.read_element(), nullptr});
  }
  reserved_ = static_cast<int>(local_.size());  // restored results occupy buffer room too
}

void ParallelRunner::add_buffer(int elements, bool autotune) {
  std::lock_guard lock(mu_);
  KILN_CHECK(!started_ && elements > 0, "add_buffer(", elements, ") after next() on stage ", opt_.stage);
  buffer_ = BufferTuner(buffer_.size() + elements, buffer_.enabled() || autotune);
  if (autotune && counters_ != nullptr) counters_->autotuned = true;
  publish_sizes_locked();
}

RunnerIterator::RunnerIterator(const DatasetNode& node, const IteratorContext& ctx,
                               ParallelRunner::Fn fn, RunnerOptions options)
    : RunnerIterator(node, ctx, [&] { return node.inputs().at(0)->make_iterator(ctx); }, std::move(fn),
                     std::move(options)) {}

RunnerIterator::RunnerIterator(const DatasetNode& node, const IteratorContext& ctx,
                               const std::function<IteratorPtr()>& make_input, ParallelRunner::Fn fn,
                               RunnerOptions options)
    : IteratorBase(node, ctx), input_(make_input()) {
  options.stage = stage();
  runner_ = std::make_unique<ParallelRunner>(*input_, std::move(fn), std::move(options), counters());
}

}  // namespace kiln::data
