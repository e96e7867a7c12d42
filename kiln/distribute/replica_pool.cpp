// ReplicaPool: dispatch to the replica threads and wait.
#include "kiln/distribute/replica_pool_impl.h"

namespace kiln::distribute {

ReplicaPool::ReplicaPool(int replicas, std::function<void(int)> on_start)
    : on_start_(std::move(on_start)), errors_(static_cast<size_t>(replicas)) {
  for (int r = 0; r < replicas; ++r) threads_.emplace_back([this, r] { loop(r); });
}

ReplicaPool::~ReplicaPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::vector<std::exception_ptr> ReplicaPool::run(const std::function<void(int)>& body,
                                                 const std::function<void()>& on_error) {
  std::unique_lock<std::mutex> lock(mutex_);
  body_ = &body;
  on_error_ = &on_error;
  std::fill(errors_.begin(), errors_.end(), nullptr);
  running_ = static_cast<int>(threads_.size());
  ++generation_;
  work_cv_.notify_all();
  done_cv_.wait(lock, [&] { return running_ == 0; });
  body_ = nullptr;
  on_error_ = nullptr;
  return errors_;
}

void ReplicaPool::loop(int replica) {
  if (on_start_) on_start_(replica);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* body = nullptr;
    const std::function<void()>* on_error = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      body = body_;
      on_error = on_error_;
    }
    std::exception_ptr error;
    try {
      (*body)(replica);
    } catch (...) {
      error = std::current_exception();
      (*on_error)();  // outside the lock: it wakes replicas blocked in a collective
    }
    std::lock_guard<std::mutex> lock(mutex_);
    errors_[static_cast<size_t>(replica)] = error;
    if (--running_ == 0) done_cv_.notify_all();
  }
}

}  // namespace kiln::distribute
