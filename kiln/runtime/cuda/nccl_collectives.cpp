#include "kiln/runtime/cuda/nccl_collectives_impl.h"

#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "kiln/core/check.h"
#include "kiln/runtime/cuda/cuda_device_impl.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"

#define KILN_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion) X(ncclGetErrorString) X(ncclCommInitAll) X(ncclCommDestroy) X(ncclAllReduce) \
  X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommAbort) X(ncclAllGather) X(ncclReduceScatter) X(ncclSend) \
  X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)

namespace kiln::cuda {
namespace {

struct Nccl {
#define KILN_NCCL_MEMBER(f) decltype(&::f) f = nullptr;
  KILN_NCCL_FUNCTIONS(KILN_NCCL_MEMBER)
#undef KILN_NCCL_MEMBER
};

const Nccl& nccl() {
  // Leaked on purpose, as the driver: communicators destroyed at exit still reach NCCL.
  static const auto* const loaded = new std::pair<Nccl, std::string>([] {
    std::pair<Nccl, std::string> l;
    void* lib = open_toolkit_library(str_cat("libnccl.so.", NCCL_MAJOR), l.second);
    if (lib == nullptr) {
      l.second = str_cat("[cuda] cannot load NCCL (libnccl.so.", NCCL_MAJOR, "), which runs all_reduce across GPUs: ",
                         l.second, ".");
      return l;
    }
    l.second.clear();
    const char* missing = nullptr;
#define KILN_NCCL_LOAD(f) \
  if (missing == nullptr && (l.first.f = reinterpret_cast<decltype(l.first.f)>(dlsym(lib, #f))) == nullptr) missing = #f;
    KILN_NCCL_FUNCTIONS(KILN_NCCL_LOAD)
#undef KILN_NCCL_LOAD
    if (missing != nullptr) l.second = str_cat("[cuda] libnccl.so.", NCCL_MAJOR, " has no ", missing, ".");
    return l;
  }());
  if (!loaded->second.empty()) throw ConfigError(loaded->second);
  return loaded->first;
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) KILN_THROW(InternalError, "[cuda] ", what, " failed: ", nccl().ncclGetErrorString(r), ".");
}

std::optional<ncclDataType_t> nccl_type(DType t) {
  switch (t) {
    case DType::kF32: return ncclFloat32;
    case DType::kF64: return ncclFloat64;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF16: return ncclFloat16;
    case DType::kI32: return ncclInt32;
    case DType::kI64: return ncclInt64;
    case DType::kU8: return ncclUint8;
    case DType::kBool: return std::nullopt;  // a sum of bools is not a bool
    case DType::kString: return std::nullopt;
  }
  return std::nullopt;
}

std::string gpu_list(const std::vector<int>& ordinals) {
  std::string s;
  for (int o : ordinals) s += str_cat(s.empty() ? "" : ", ", "cuda:", o);
  return s;
}

}  // namespace

NcclCollectives::NcclCollectives(std::vector<int> ordinals)
    : ordinals_(std::move(ordinals)), num_replicas_(static_cast<int>(ordinals_.size())) {
  std::vector<int> sorted = ordinals_;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.size() < 2 || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    KILN_THROW(ValueError, "[cuda] NCCL all_reduce needs two or more distinct GPUs, received ", gpu_list(ordinals_), ".");
  try {
    nccl();
    for (int o : ordinals_) cuda_device(o);  // the driver and every GPU, before NCCL looks for them
  } catch (const ConfigError& e) {
    KILN_THROW(ConfigError, "[cuda] NCCL all_reduce over ", gpu_list(ordinals_), ": ", e.what());
  }
  std::vector<ncclComm_t> comms(ordinals_.size());
  check_nccl(nccl().ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), ordinals_.data()), "ncclCommInitAll");
  comms_.assign(comms.begin(), comms.end());
}

NcclCollectives::NcclCollectives(int ordinal, int rank, int num_ranks, const runtime::CollectivesIdExchange& exchange)
    : ordinals_{ordinal}, num_replicas_(num_ranks), first_rank_(rank) {
  // Every process reaches the exchange, ready or not: one that could not join NCCL would
  // leave the others waiting in ncclCommInitRank forever.
  std::string why_not;
  if (num_ranks < 2 || rank < 0 || rank >= num_ranks)
    why_not = str_cat("[cuda] NCCL across processes needs two or more ranks and 0 <= rank < ranks, received rank ", rank,
                      " of ", num_ranks, ".");
  try {
    if (why_not.empty()) {
      nccl();
      cuda_device(ordinal);
    }
  } catch (const ConfigError& e) {
    why_not = str_cat("[cuda] NCCL all_reduce across processes on cuda:", ordinal, ": ", e.what());
  }
  const std::vector<uint8_t> id = exchange(why_not, [] { return nccl_unique_id(); });
  if (!why_not.empty()) throw ConfigError(why_not);  // the exchange reports it on every process first
  if (id.size() != sizeof(ncclUniqueId))
    KILN_THROW(InternalError, "[cuda] the NCCL id exchanged between the processes has ", id.size(), " bytes, expected ",
               sizeof(ncclUniqueId), ".");
  ncclUniqueId unique;
  std::memcpy(&unique, id.data(), sizeof unique);
  cuda_device(ordinal).make_current();  // NCCL takes the calling thread's current GPU
  ncclComm_t comm = nullptr;
  check_nccl(nccl().ncclCommInitRank(&comm, num_ranks, unique, rank), "ncclCommInitRank");
  comms_.push_back(comm);
}

NcclCollectives::~NcclCollectives() {
  for (void* c : comms_)
    if (c != nullptr) nccl().ncclCommDestroy(static_cast<ncclComm_t>(c));
}

void NcclCollectives::abort() {
  std::lock_guard lock(mutex_);
  if (aborted_) return;
  aborted_ = true;
  for (void*& c : comms_) {
    if (c != nullptr) nccl().ncclCommAbort(static_cast<ncclComm_t>(c));  // an error here changes nothing: it is gone
    c = nullptr;
  }
}

void NcclCollectives::reset() {
  std::lock_guard lock(mutex_);
  if (!aborted_) return;
  if (num_replicas_ != static_cast<int>(ordinals_.size()))
    KILN_THROW(ConfigError, "[cuda] NCCL across processes was aborted after a replica failed; its ranks cannot meet "
               "again. Hint: restart the job (from its last checkpoint).");
  std::vector<ncclComm_t> comms(ordinals_.size());
  check_nccl(nccl().ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), ordinals_.data()), "ncclCommInitAll");
  comms_.assign(comms.begin(), comms.end());
  aborted_ = false;
}

void NcclCollectives::throw_if_aborted() const {
  std::lock_guard lock(mutex_);
  if (aborted_) throw runtime::ReplicaAborted{};
}

bool NcclCollectives::supports(ir::ReduceKind kind, DType dtype) {
  return (kind == ir::ReduceKind::kSum || kind == ir::ReduceKind::kMean) && nccl_type(dtype).has_value();
}

void NcclCollectives::all_reduce_on_device(int replica, CUstream stream, CUdeviceptr data, int64_t count, DType dtype,
                                           ir::ReduceKind kind) const {
  KILN_CHECK(supports(kind, dtype), "NCCL all_reduce of an unsupported kind or dtype");
  std::lock_guard lock(mutex_);
  if (aborted_) throw runtime::ReplicaAborted{};
  void* p = reinterpret_cast<void*>(data);
  check_nccl(nccl().ncclAllReduce(p, p, static_cast<size_t>(count), *nccl_type(dtype),
                                  kind == ir::ReduceKind::kSum ? ncclSum : ncclAvg,
                                  static_cast<ncclComm_t>(comms_.at(static_cast<size_t>(replica))),
                                  reinterpret_cast<cudaStream_t>(stream)),
             "ncclAllReduce");
}

template <typename Fn>
void NcclCollectives::enqueue(int replica, Fn fn) const {
  std::lock_guard lock(mutex_);
  if (aborted_) throw runtime::ReplicaAborted{};
  fn(static_cast<ncclComm_t>(comms_.at(static_cast<size_t>(replica))));
}

void NcclCollectives::all_gather_on_device(int replica, CUstream stream, CUdeviceptr send, CUdeviceptr recv,
                                           int64_t bytes) const {
  enqueue(replica, [&](ncclComm_t comm) {
    check_nccl(nccl().ncclAllGather(reinterpret_cast<void*>(send), reinterpret_cast<void*>(recv), static_cast<size_t>(bytes),
                                    ncclUint8, comm, reinterpret_cast<cudaStream_t>(stream)),
               "ncclAllGather");
  });
}

void NcclCollectives::reduce_scatter_on_device(int replica, CUstream stream, CUdeviceptr send, CUdeviceptr recv,
                                               int64_t count, DType dtype, ir::ReduceKind kind) const {
  KILN_CHECK(supports(kind, dtype), "NCCL reduce_scatter of an unsupported kind or dtype");
  enqueue(replica, [&](ncclComm_t comm) {
    check_nccl(nccl().ncclReduceScatter(reinterpret_cast<void*>(send), reinterpret_cast<void*>(recv),
                                        static_cast<size_t>(count), *nccl_type(dtype),
                                        kind == ir::ReduceKind::kSum ? ncclSum : ncclAvg, comm,
                                        reinterpret_cast<cudaStream_t>(stream)),
               "ncclReduceScatter");
  });
}

void NcclCollectives::send_recv_on_device(int replica, CUstream stream, const std::vector<Transfer>& transfers) const {
  enqueue(replica, [&](ncclComm_t comm) {
    check_nccl(nccl().ncclGroupStart(), "ncclGroupStart");
    for (const Transfer& t : transfers) {
      void* p = reinterpret_cast<void*>(t.data);
      const auto n = static_cast<size_t>(t.bytes);
      if (t.send) check_nccl(nccl().ncclSend(p, n, ncclUint8, t.peer, comm, reinterpret_cast<cudaStream_t>(stream)), "ncclSend");
      else check_nccl(nccl().ncclRecv(p, n, ncclUint8, t.peer, comm, reinterpret_cast<cudaStream_t>(stream)), "ncclRecv");
    }
    check_nccl(nccl().ncclGroupEnd(), "ncclGroupEnd");
  });
}

void NcclCollectives::all_reduce(int replica, ir::ReduceKind kind, DType dtype, void* data, int64_t count) {
  if (!supports(kind, dtype))
    KILN_THROW(DTypeError, "[cuda] NCCL all_reduce has no ", ir::reduce_kind_name(kind), " of ", name(dtype), ".");
  CudaDevice& gpu = cuda_device(ordinal(replica));
  const Shape shape(dtype, {count});
  runtime::Buffer b = gpu.to_device(HostTensor::view(shape, data));
  b.ready().wait();
  gpu.make_current();
  all_reduce_on_device(replica, gpu.compute_cu_stream(), reinterpret_cast<CUdeviceptr>(b.device_address()), count, dtype, kind);
  try {
    gpu.wait_cu_stream(gpu.compute_cu_stream());
  } catch (...) {
    throw_if_aborted();  // cut short by another replica's failure: that one reports it
    throw;
  }
  throw_if_aborted();
  const HostTensor out = gpu.to_host(b);
  std::memcpy(data, out.raw_data(), static_cast<size_t>(out.byte_size()));
}

std::shared_ptr<runtime::Collectives> make_nccl_collectives(const std::vector<int>& ordinals) {
  return std::make_shared<NcclCollectives>(ordinals);
}

std::shared_ptr<runtime::Collectives> make_nccl_collectives_across_processes(int ordinal, int rank, int num_ranks,
                                                                             const runtime::CollectivesIdExchange& exchange) {
  return std::make_shared<NcclCollectives>(ordinal, rank, num_ranks, exchange);
}

std::vector<uint8_t> nccl_unique_id() {
  ncclUniqueId id;
  check_nccl(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId");
  const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
  return std::vector<uint8_t>(bytes, bytes + sizeof id);
}

std::string nccl_version() {
  int v = 0;
  check_nccl(nccl().ncclGetVersion(&v), "ncclGetVersion");
  return str_cat(v / 10000, ".", v % 10000 / 100, ".", v % 100);
}

}  // namespace kiln::cuda
