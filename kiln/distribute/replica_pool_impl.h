// ReplicaPool: one persistent thread per local replica (internal to distribute/). Threads
// persist so each keeps its OpenMP team and oneDNN's per-thread state between steps; each
// runs its kernels with its device's share of the host threads.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::distribute {

class ReplicaPool {
 public:
  /// `replicas` threads; thread r calls on_start(r) once before any work.
  ReplicaPool(int replicas, std::function<void(int)> on_start);
  ~ReplicaPool();
  ReplicaPool(const ReplicaPool&) = delete;
  ReplicaPool& operator=(const ReplicaPool&) = delete;

  /// Runs body(r) on thread r for every replica and waits for all. When one throws,
  /// on_error() runs at once (to release replicas waiting for it) and the errors come back
  /// per replica (null where the replica succeeded).
  std::vector<std::exception_ptr> run(const std::function<void(int)>& body, const std::function<void()>& on_error);

 private:
  void loop(int replica);

  std::vector<std::thread> threads_;
  std::function<void(int)> on_start_;
  std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  const std::function<void(int)>* body_ = nullptr;
  const std::function<void()>* on_error_ = nullptr;
  std::vector<std::exception_ptr> errors_;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool stop_ = false;
};

}  // namespace kiln::distribute
