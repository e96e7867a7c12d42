// Strategy: data parallelism over replicas (tf.distribute). One program runs on every replica
// with its shard of each global batch; gradients meet in an all_reduce instruction inside the
// compiled step. DefaultStrategy is one replica on the calling thread; MirroredStrategy runs
// one replica per logical CPU device on its own thread; MultiWorkerMirroredStrategy adds MPI
// ranks (processes, possibly on other hosts). Strategies are shared objects:
//
//   std::shared_ptr<Strategy> strategy = distribute::auto_detect();
//   { auto scope = strategy->scope(); model = make_model(); model->compile(...); }
//   model->fit(ds, ...);                       // splits each global batch over the replicas
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/data/dataset.h"
#include "kiln/trace/replica_context.h"

namespace kiln::distribute {

class InProcessCollectives;
class ReplicaPool;
class DistributedDataset;
class Strategy;

/// How reduce() combines the replicas' values.
enum class ReduceOp { kSum, kMean };

/// One value per local replica (tf.distribute's PerReplica), in replica order.
template <typename T>
struct PerReplica {
  std::vector<T> values;
  size_t size() const { return values.size(); }
  T& operator[](size_t i) { return values[i]; }
  const T& operator[](size_t i) const { return values[i]; }
};

/// What a per-worker input function is told (tf.distribute.InputContext).
struct InputContext {
  int num_input_pipelines = 1;  // workers
  int input_pipeline_id = 0;    // this worker
  int num_replicas_in_sync = 1;
  /// global_batch / num_replicas_in_sync; DataError naming both when it does not divide.
  int64_t per_replica_batch_size(int64_t global_batch) const;
};

/// Makes `strategy` current on this thread and every Variable created meanwhile mirrored (one
/// copy per local replica, kept identical). Returned by Strategy::scope().
class StrategyScope {
 public:
  explicit StrategyScope(std::shared_ptr<Strategy> strategy);
  ~StrategyScope();
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;

 private:
  std::shared_ptr<Strategy> strategy_;
  trace::MirrorScope mirrors_;
};

class Strategy : public std::enable_shared_from_this<Strategy> {
 public:
  virtual ~Strategy();
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  /// "DefaultStrategy", "MirroredStrategy", "MultiWorkerMirroredStrategy".
  const std::string& name() const { return name_; }
  /// Replicas in sync across every worker: each step's global batch is split this many ways.
  int num_replicas_in_sync() const { return num_local_replicas() * num_workers_; }
  /// Replicas in this process (one per local device).
  int num_local_replicas() const { return static_cast<int>(devices_.size()); }
  int num_workers() const { return num_workers_; }
  int worker_index() const { return worker_index_; }
  /// Worker 0 prints progress and writes files; the others stay quiet.
  bool is_chief() const { return worker_index_ == 0; }
  /// This process's devices, one per local replica ("cpu:0", ...).
  const std::vector<std::string>& devices() const { return devices_; }
  /// Threads each local replica runs its kernels with.
  int threads_per_replica() const { return threads_per_replica_; }
  /// The backend local replica `r` compiles for: its GPU's; null for CPU replicas (they use
  /// the default backend).
  std::shared_ptr<runtime::Backend> replica_backend(int r) const {
    return backends_.empty() ? nullptr : backends_.at(static_cast<size_t>(r));
  }
  /// "MirroredStrategy: 4 replicas in sync (cpu:0 .. cpu:3, 1 thread each)".
  std::string describe() const;

  /// Makes this strategy current and new variables mirrored until the scope ends. The
  /// strategy must be owned by a std::shared_ptr (as auto_detect() and the make_* helpers do).
  [[nodiscard]] StrategyScope scope();

  /// Calls fn(inputs[r]) as replica r for every local replica, concurrently (each on its
  /// device's thread), and returns the results per replica. kiln::Functions called inside
  /// compile one executable per replica whose all_reduce instructions meet each other. An
  /// error in one replica releases the others and is rethrown here.
  template <typename Fn, typename T>
  auto run(Fn&& fn, const PerReplica<T>& inputs) {
    using R = std::invoke_result_t<Fn&, const T&>;
    check_per_replica(inputs.size(), "run");
    if constexpr (std::is_void_v<R>) {
      run_replicas([&](int r) { fn(inputs[static_cast<size_t>(r)]); });
    } else {
      PerReplica<R> out;
      out.values.resize(inputs.size());
      run_replicas([&](int r) { out[static_cast<size_t>(r)] = fn(inputs[static_cast<size_t>(r)]); });
      return out;
    }
  }
  /// The non-template core of run(): body(r) as each local replica.
  void run_replicas(const std::function<void(int replica)>& body);

  /// Sums (or averages) one value per local replica over every replica in sync, in replica
  /// order, then across workers. The result is the same on every worker.
  HostTensor reduce(ReduceOp op, const PerReplica<HostTensor>& values) const;
  std::vector<HostTensor> reduce(ReduceOp op, const PerReplica<std::vector<HostTensor>>& values) const;

  /// Splits a global batch (every component's leading dim) into this worker's per-replica
  /// shards: replica g of R = num_replicas_in_sync() gets n/R rows, one more when g < n % R
  /// (tf.distribute's uneven split of a partial batch; with n < R some shards are empty).
  PerReplica<data::Element> split_batch(const data::Element& global_batch) const;
  /// The rows local replica `replica` gets of a global batch of `rows` (split_batch's split).
  int64_t shard_rows(int64_t rows, int replica) const;
  /// Each element of `dataset` is a global batch; the iterator yields per-replica shards.
  DistributedDataset distribute_dataset(const data::Dataset& dataset) const;
  /// Each worker builds its own pipeline with fn(context) (reading its shard of the input,
  /// batched per worker); the iterator splits each worker batch over the local replicas.
  DistributedDataset distribute_datasets_from_function(
      const std::function<data::Dataset(const InputContext&)>& fn) const;
  InputContext input_context() const;

 protected:
  struct Config {
    std::string name;
    std::vector<std::string> devices{"cpu:0"};
    int threads_per_replica = 0;  // 0: leave the calling thread's setting
    int num_workers = 1;
    int worker_index = 0;
    bool replica_context = true;  // false for DefaultStrategy: plain single-device calls
    /// GPU replicas: replica r compiles and runs on backends[r], and its all_reduce meets the
    /// others through `device_collectives` (NCCL). Empty/null for CPU replicas.
    std::vector<std::shared_ptr<runtime::Backend>> backends;
    std::shared_ptr<runtime::Collectives> device_collectives;
  };
  explicit Strategy(Config config);

 private:
  void check_per_replica(size_t n, const char* where) const;
  /// What local replica `r`'s thread runs as: its ids, collectives and (GPU replicas) backend.
  trace::ReplicaContext replica_context(int r) const;
  PerReplica<data::Element> split(const data::Element& batch, int parts, int first_part, const char* where) const;
  friend class DistributedDataset;

  std::string name_;
  std::vector<std::string> devices_;
  int threads_per_replica_;
  int num_workers_, worker_index_;
  bool replica_context_;
  std::shared_ptr<InProcessCollectives> collectives_;
  std::vector<std::shared_ptr<runtime::Backend>> backends_;
  std::shared_ptr<runtime::Collectives> device_collectives_;
  std::unique_ptr<ReplicaPool> pool_;
};

/// One replica on the calling thread: code runs exactly as without a strategy.
class DefaultStrategy : public Strategy {
 public:
  DefaultStrategy();
};

/// One replica per device of this host ("cpu:0" .. "cpu:n-1", see logical_devices.h); empty
/// `devices` means every logical CPU device. GPUs ("cuda:0", "cuda:1", ...): one replica per
/// GPU, each compiling for its own cuda backend, gradients all-reduced by NCCL in the step;
/// ConfigError when the CUDA backend, NCCL or a GPU is missing. ConfigError naming an unknown
/// device, a repeated one, or a list mixing CPU and GPU devices.
class MirroredStrategy : public Strategy {
 public:
  explicit MirroredStrategy(std::vector<std::string> devices = {});

 private:
  static Config gpu_config(const std::vector<std::string>& devices);
};

/// Every MPI rank is a worker. With no `devices`, its logical CPU devices are its local
/// replicas; all_reduce sums in replica order inside each process, then MPI_Allreduce across
/// ranks. With one GPU ({"cuda:N"}: launch one process per GPU), that GPU is the worker's one
/// replica and all_reduce is NCCL's across the workers' GPUs, inside the compiled step: rank
/// 0 makes NCCL's id and MPI_Bcast sends it to the others (mpi::exchange_id), then every rank
/// joins (ncclCommInitRank). ConfigError when the build has no MPI, for more than one device
/// or a CPU device in `devices`, and, on every rank, when one rank lacks its GPU, NCCL or the
/// CUDA backend.
class MultiWorkerMirroredStrategy : public Strategy {
 public:
  explicit MultiWorkerMirroredStrategy(std::vector<std::string> devices = {});

 private:
  static Config gpu_config(int rank, int num_workers, const std::vector<std::string>& devices);
};

/// The strategy of the innermost scope() on this thread, else the process's DefaultStrategy.
std::shared_ptr<Strategy> current_strategy();
/// Whether a scope() is active on this thread (tf.distribute.has_strategy).
bool has_strategy();

}  // namespace kiln::distribute
