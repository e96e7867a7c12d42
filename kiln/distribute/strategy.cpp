// Strategy: replica threads and collectives, scopes, run, reduce and batch splitting; the
// three concrete strategies differ only in their Config.
#include "kiln/distribute/strategy.h"

#include <algorithm>
#include <exception>
#include <sstream>

#include "kiln/core/check.h"
#include "kiln/distribute/distributed_dataset.h"
#include "kiln/distribute/in_process_collectives.h"
#include "kiln/distribute/logical_devices.h"
#include "kiln/distribute/mpi/mpi_world.h"
#include "kiln/distribute/replica_pool_impl.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/gpus.h"

namespace kiln::distribute {
namespace {

thread_local std::vector<std::shared_ptr<Strategy>> t_scopes;

std::string device_range(const std::vector<std::string>& devices) {
  if (devices.size() <= 2) return str_join(devices, ", ");
  return str_cat(devices.front(), " .. ", devices.back());
}

}  // namespace

int64_t InputContext::per_replica_batch_size(int64_t global_batch) const {
  if (global_batch % num_replicas_in_sync != 0)
    KILN_THROW(DataError, "[distribute] the global batch size ", global_batch, " is not divisible by the ",
               num_replicas_in_sync, " replicas in sync. Hint: use a global batch that is a multiple of ",
               num_replicas_in_sync, ", e.g. ", (global_batch / num_replicas_in_sync + 1) * num_replicas_in_sync, ".");
  return global_batch / num_replicas_in_sync;
}

StrategyScope::StrategyScope(std::shared_ptr<Strategy> strategy)
    : strategy_(std::move(strategy)), mirrors_(strategy_->num_local_replicas()) {
  t_scopes.push_back(strategy_);
}
StrategyScope::~StrategyScope() { t_scopes.pop_back(); }

std::shared_ptr<Strategy> current_strategy() {
  if (!t_scopes.empty()) return t_scopes.back();
  // The process's default strategy: the one explicit default docs/style.md 2.7 allows.
  static const std::shared_ptr<Strategy> fallback = std::make_shared<DefaultStrategy>();
  return fallback;
}

bool has_strategy() { return !t_scopes.empty(); }

Strategy::Strategy(Config c)
    : name_(std::move(c.name)), devices_(std::move(c.devices)), threads_per_replica_(c.threads_per_replica),
      num_workers_(c.num_workers), worker_index_(c.worker_index), replica_context_(c.replica_context),
      backends_(std::move(c.backends)), device_collectives_(std::move(c.device_collectives)) {
  KILN_CHECK(!devices_.empty(), "a strategy needs at least one device");
  const int local = num_local_replicas();
  const int total = num_replicas_in_sync();
  if (total > 1) {
    InProcessCollectives::CrossProcessSum cross;
    InProcessCollectives::CrossProcessGather gather;
    if (num_workers_ > 1) {
      cross = [](DType t, void* p, int64_t n) { mpi::all_reduce_sum(t, p, n); };
      gather = [](const void* in, int64_t bytes, void* out) { mpi::all_gather(in, bytes, out); };
    }
    collectives_ = std::make_shared<InProcessCollectives>(local, total, std::move(cross), std::move(gather),
                                                          num_workers_ > 1 ? worker_index_ : 0);
  }
  if (local > 1) {
    const int threads = threads_per_replica_;
    pool_ = std::make_unique<ReplicaPool>(local, [threads](int) {
      if (threads > 0) set_thread_share(threads);
    });
  }
}

Strategy::~Strategy() = default;

std::string Strategy::describe() const {
  std::ostringstream os;
  os << name_ << ": " << num_replicas_in_sync() << " replica" << (num_replicas_in_sync() == 1 ? "" : "s")
     << " in sync (";
  if (num_workers_ > 1) os << num_workers_ << " workers, this is worker " << worker_index_ << "; ";
  os << device_range(devices_);
  if (threads_per_replica_ > 0) os << ", " << threads_per_replica_ << " thread" << (threads_per_replica_ == 1 ? "" : "s") << " each";
  os << ")";
  return os.str();
}

StrategyScope Strategy::scope() {
  std::shared_ptr<Strategy> self = weak_from_this().lock();
  if (!self)
    KILN_THROW(ConfigError, "[", name_, "] scope() needs a strategy owned by a std::shared_ptr. Hint: "
               "std::make_shared<MirroredStrategy>(...) or distribute::auto_detect().");
  return StrategyScope(std::move(self));
}

void Strategy::check_per_replica(size_t n, const char* where) const {
  if (static_cast<int>(n) != num_local_replicas())
    KILN_THROW(ValueError, "[", name_, "." , where, "] expected one value per local replica (", num_local_replicas(),
               "), received ", n, ". Hint: distribute the inputs with distribute_dataset or split_batch.");
}

void Strategy::run_replicas(const std::function<void(int)>& body) {
  if (!pool_) {  // one local replica: the calling thread
    if (!replica_context_) return body(0);
    trace::ReplicaScope scope(replica_context(0));
    return body(0);
  }
  std::vector<std::exception_ptr> errors = pool_->run(
      [&](int r) {
        trace::ReplicaScope scope(replica_context(r));
        body(r);
      },
      [this] {
        collectives_->abort();
        if (device_collectives_) device_collectives_->abort();  // NCCL: ncclCommAbort, so no GPU waits
      });
  std::exception_ptr first;
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const ReplicaAborted&) {  // released because another replica failed
    } catch (...) {
      if (!first) first = e;
    }
  }
  bool any = false;
  for (const std::exception_ptr& e : errors) any = any || e != nullptr;
  if (any) {
    collectives_->reset();
    if (device_collectives_) device_collectives_->reset();
  }
  if (first) std::rethrow_exception(first);
  KILN_CHECK(!any, "replicas were aborted without an error");
}

trace::ReplicaContext Strategy::replica_context(int r) const {
  const int local = num_local_replicas();
  return {r, local, device_collectives_ ? device_collectives_ : collectives_, worker_index_ * local + r,
          backends_.empty() ? nullptr : backends_.at(static_cast<size_t>(r))};
}

HostTensor Strategy::reduce(ReduceOp op, const PerReplica<HostTensor>& values) const {
  check_per_replica(values.size(), "reduce");
  const Shape& shape = values[0].shape();
  HostTensor sum = values[0].astype(DType::kF64);
  for (size_t r = 1; r < values.size(); ++r) {
    if (!(values[r].shape() == shape))
      KILN_THROW(ShapeError, "[", name_, ".reduce] replica ", r, " has ", values[r].shape(), ", replica 0 has ",
                 shape, ".");
    HostTensor v = values[r].astype(DType::kF64);
    auto dst = sum.data<double>();
    auto src = v.data<double>();
    for (size_t i = 0; i < dst.size(); ++i) dst[i] += src[i];
  }
  if (num_workers_ > 1) mpi::all_reduce_sum(DType::kF64, sum.raw_data(), sum.num_elements());
  if (op == ReduceOp::kMean)
    for (double& v : sum.data<double>()) v /= num_replicas_in_sync();
  return sum.astype(shape.dtype());
}

std::vector<HostTensor> Strategy::reduce(ReduceOp op, const PerReplica<std::vector<HostTensor>>& values) const {
  check_per_replica(values.size(), "reduce");
  std::vector<HostTensor> out;
  for (size_t k = 0; k < values[0].size(); ++k) {
    PerReplica<HostTensor> column;
    for (size_t r = 0; r < values.size(); ++r) column.values.push_back(values[r].at(k));
    out.push_back(reduce(op, column));
  }
  return out;
}

PerReplica<data::Element> Strategy::split(const data::Element& batch, int parts, int first_part,
                                          const char* where) const {
  if (batch.empty() || batch[0].rank() == 0)
    KILN_THROW(DataError, "[", name_, ".", where, "] expected batched elements, received ", batch.shapes_string(),
               ". Hint: batch the dataset with the global batch size first.");
  const int64_t rows = batch[0].dims()[0];
  for (const HostTensor& c : batch)
    if (c.rank() == 0 || c.dims()[0] != rows)
      KILN_THROW(DataError, "[", name_, ".", where, "] the components of ", batch.shapes_string(),
                 " have different batch sizes.");
  // A batch that does not divide (an epoch's short last batch) is split unevenly, as
  // tf.distribute does: the first rows % parts replicas get one row more, and with fewer rows
  // than replicas some get none. Each replica compiles its shard's shape once; the train step
  // weighs the replicas by their rows, so loss, gradients and metrics are the global batch's.
  const int64_t per = rows / parts, extra = rows % parts;
  PerReplica<data::Element> out;
  for (int l = 0; l < num_local_replicas(); ++l) {
    const int64_t g = first_part + l;
    const int64_t begin = g * per + std::min(g, extra);
    const int64_t end = begin + per + (g < extra ? 1 : 0);
    data::Element shard;
    for (const HostTensor& c : batch) shard.push_back(c.slice_rows(begin, end));
    out.values.push_back(std::move(shard));
  }
  return out;
}

PerReplica<data::Element> Strategy::split_batch(const data::Element& global_batch) const {
  return split(global_batch, num_replicas_in_sync(), worker_index_ * num_local_replicas(), "split_batch");
}

int64_t Strategy::shard_rows(int64_t rows, int replica) const {
  const int64_t parts = num_replicas_in_sync(), g = int64_t{worker_index_} * num_local_replicas() + replica;
  return rows / parts + (g < rows % parts ? 1 : 0);
}

InputContext Strategy::input_context() const { return {num_workers_, worker_index_, num_replicas_in_sync()}; }

namespace {
std::shared_ptr<const Strategy> owned(const Strategy& s) {
  std::shared_ptr<const Strategy> self = s.weak_from_this().lock();
  if (!self)
    KILN_THROW(ConfigError, "[", s.name(), "] distributing a dataset needs a strategy owned by a std::shared_ptr. "
               "Hint: std::make_shared<MirroredStrategy>(...) or distribute::auto_detect().");
  return self;
}
}  // namespace

DistributedDataset Strategy::distribute_dataset(const data::Dataset& dataset) const {
  return DistributedDataset(owned(*this), dataset, /*per_worker=*/false);
}

DistributedDataset Strategy::distribute_datasets_from_function(
    const std::function<data::Dataset(const InputContext&)>& fn) const {
  return DistributedDataset(owned(*this), fn(input_context()), /*per_worker=*/true);
}

std::optional<PerReplica<data::Element>> DistributedDataset::Iterator::next() {
  std::optional<data::Element> e = it_.next();
  if (!e) return std::nullopt;
  if (per_worker_)  // a worker batch: split over the local replicas only
    return strategy_->split(*e, strategy_->num_local_replicas(), 0, "distribute_datasets_from_function");
  return strategy_->split(*e, strategy_->num_replicas_in_sync(), strategy_->worker_index() * strategy_->num_local_replicas(),
                          "distribute_dataset");
}

DefaultStrategy::DefaultStrategy()
    : Strategy({.name = "DefaultStrategy", .devices = {"cpu:0"}, .replica_context = false}) {}

// One replica per GPU of `devices` ("cuda:N", all of them): its backend, and NCCL between them.
Strategy::Config MirroredStrategy::gpu_config(const std::vector<std::string>& devices) {
  Config c{.name = "MirroredStrategy"};
  for (const std::string& d : devices)
    if (!d.starts_with("cuda"))
      KILN_THROW(ConfigError, "[MirroredStrategy] devices mix GPUs and ", d, ": replicas are all GPUs or all CPU devices.");
  std::vector<int> ordinals;
  for (const std::string& d : devices) {
    c.backends.push_back(runtime::make_backend(d));  // ConfigError naming a malformed or missing GPU
    c.devices.push_back(c.backends.back()->device().name());
    ordinals.push_back(std::stoi(c.devices.back().substr(5)));
    if (std::count(ordinals.begin(), ordinals.end(), ordinals.back()) > 1)
      KILN_THROW(ConfigError, "[MirroredStrategy] device ", c.devices.back(), " is listed twice.");
  }
  if (ordinals.size() > 1) c.device_collectives = runtime::make_gpu_collectives(ordinals);
  return c;
}

namespace {

std::vector<std::string> mirrored_devices(std::vector<std::string> devices) {
  if (devices.empty()) return logical_cpu_device_names();
  std::vector<bool> seen(static_cast<size_t>(config::logical_cpu_devices()), false);
  for (std::string& d : devices) {
    const int i = parse_cpu_device(d);
    if (seen[static_cast<size_t>(i)])
      KILN_THROW(ConfigError, "[MirroredStrategy] device cpu:", i, " is listed twice.");
    seen[static_cast<size_t>(i)] = true;
    d = str_cat("cpu:", i);
  }
  return devices;
}
}  // namespace

MirroredStrategy::MirroredStrategy(std::vector<std::string> devices)
    : Strategy([&] {
        if (!devices.empty() && devices.front().starts_with("cuda")) return gpu_config(devices);
        Config c{.name = "MirroredStrategy", .devices = mirrored_devices(std::move(devices))};
        c.threads_per_replica = threads_per_device(config::logical_cpu_devices());
        return c;
      }()) {}

// This worker's GPU as its one replica; NCCL across the workers' GPUs, joined over MPI.
Strategy::Config MultiWorkerMirroredStrategy::gpu_config(int rank, int num_workers, const std::vector<std::string>& devices) {
  if (devices.size() != 1 || !devices[0].starts_with("cuda"))
    KILN_THROW(ConfigError, "[MultiWorkerMirroredStrategy] devices must be one GPU per worker (\"cuda:N\", one process "
               "per GPU), or none for the CPU devices; received ", str_join(devices, ", "), ".");
  const runtime::CollectivesIdExchange exchange = mpi::exchange_id;
  Config c{.name = "MultiWorkerMirroredStrategy", .devices = {}, .num_workers = num_workers, .worker_index = rank};
  try {
    c.backends.push_back(runtime::make_backend(devices[0]));  // ConfigError naming a malformed or missing GPU
  } catch (const Error& e) {
    exchange(e.what(), {});  // fails every worker, this one included, so none waits in NCCL
    throw;
  }
  c.devices.push_back(c.backends.back()->device().name());
  const int ordinal = std::stoi(c.devices.back().substr(5));
  if (num_workers > 1)
    c.device_collectives = runtime::make_gpu_collectives_across_processes(ordinal, rank, num_workers, exchange);
  return c;
}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(std::vector<std::string> devices)
    : Strategy([&] {
        const mpi::World world = mpi::init();
        // A launcher variable left in the environment (OMPI_COMM_WORLD_SIZE=2 without mpirun)
        // makes MPI start a world of one: training alone while the user expects a cluster.
        if (const int launched = mpi::launched_world_size(); launched > 1 && world.size != launched)
          KILN_THROW(ConfigError, "[MultiWorkerMirroredStrategy] the environment announces ", launched,
                     " processes (", mpi::launched_world_size_variable(), "), but MPI reports a world of ", world.size,
                     ": this process was likely not started by mpirun. Hint: launch it with `mpirun -np ", launched,
                     " ...`, or unset ", mpi::launched_world_size_variable(), " to train in this process alone.");
        if (!devices.empty()) return gpu_config(world.rank, world.size, devices);
        Config c{.name = "MultiWorkerMirroredStrategy", .devices = logical_cpu_device_names()};
        c.threads_per_replica = threads_per_device(config::logical_cpu_devices());
        c.num_workers = world.size;
        c.worker_index = world.rank;
        return c;
      }()) {}

}  // namespace kiln::distribute
