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
  X(ncclGetVersion) X(ncclGetErrorString) X(ncclCommInitAll) X(ncclCommDestroy) X(ncclAllReduce)

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
  }
  return std::nullopt;
}

std::string gpu_list(const std::vector<int>& ordinals) {
  std::string s;
  for (int o : ordinals) s += str_cat(s.empty() ? "" : ", ", "cuda:", o);
  return s;
}

}  // namespace

NcclCollectives::NcclCollectives(std::vector<int> ordinals) : ordinals_(std::move(ordinals)) {
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

NcclCollectives::~NcclCollectives() {
  for (void* c : comms_) nccl().ncclCommDestroy(static_cast<ncclComm_t>(c));
}

bool NcclCollectives::supports(ir::ReduceKind kind, DType dtype) {
  return (kind == ir::ReduceKind::kSum || kind == ir::ReduceKind::kMean) && nccl_type(dtype).has_value();
}

void NcclCollectives::all_reduce_on_device(int replica, CUstream stream, CUdeviceptr data, int64_t count, DType dtype,
                                           ir::ReduceKind kind) const {
  KILN_CHECK(supports(kind, dtype), "NCCL all_reduce of an unsupported kind or dtype");
  void* p = reinterpret_cast<void*>(data);
  check_nccl(nccl().ncclAllReduce(p, p, static_cast<size_t>(count), *nccl_type(dtype),
                                  kind == ir::ReduceKind::kSum ? ncclSum : ncclAvg,
                                  static_cast<ncclComm_t>(comms_.at(static_cast<size_t>(replica))),
                                  reinterpret_cast<cudaStream_t>(stream)),
             "ncclAllReduce");
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
  gpu.wait_cu_stream(gpu.compute_cu_stream());
  const HostTensor out = gpu.to_host(b);
  std::memcpy(data, out.raw_data(), static_cast<size_t>(out.byte_size()));
}

std::shared_ptr<runtime::Collectives> make_nccl_collectives(const std::vector<int>& ordinals) {
  return std::make_shared<NcclCollectives>(ordinals);
}

std::string nccl_version() {
  int v = 0;
  check_nccl(nccl().ncclGetVersion(&v), "ncclGetVersion");
  return str_cat(v / 10000, ".", v % 10000 / 100, ".", v % 100);
}

}  // namespace kiln::cuda
