#include "kiln/runtime/cuda/cudnn_ops_impl.h"

#include <algorithm>
#include <cudnn.h>
#include <dlfcn.h>

#include <climits>
#include <map>
#include <mutex>

#include "kiln/core/check.h"
#include "kiln/ir/opcode.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"

#define KILN_CUDNN_FUNCTIONS(X)                                                                               \
  X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnSetStream) X(cudnnCreateTensorDescriptor) \
  X(cudnnSetTensor4dDescriptor) X(cudnnDestroyTensorDescriptor) X(cudnnCreateFilterDescriptor)             \
  X(cudnnSetFilter4dDescriptor) X(cudnnDestroyFilterDescriptor) X(cudnnCreateConvolutionDescriptor)         \
  X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)       \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnGetConvolutionForwardAlgorithm_v7)                           \
  X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward)                                    \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardDataWorkspaceSize)           \
  X(cudnnConvolutionBackwardData) X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                         \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize) X(cudnnConvolutionBackwardFilter)                      \
  X(cudnnCreatePoolingDescriptor) X(cudnnSetPooling2dDescriptor) X(cudnnDestroyPoolingDescriptor)          \
  X(cudnnPoolingForward) X(cudnnPoolingBackward) X(cudnnGetConvolution2dForwardOutputDim)     \
  X(cudnnGetPooling2dForwardOutputDim)

namespace kiln::cuda {
namespace {

using ir::Opcode;

struct Cudnn {
#define KILN_CUDNN_MEMBER(f) decltype(&::f) f = nullptr;
  KILN_CUDNN_FUNCTIONS(KILN_CUDNN_MEMBER)
#undef KILN_CUDNN_MEMBER
};

const Cudnn& cudnn() {
  // Leaked on purpose, as the driver: descriptors destroyed at exit still reach cuDNN.
  static const auto* const loaded = new std::pair<Cudnn, std::string>([] {
    std::pair<Cudnn, std::string> l;
    void* lib = open_toolkit_library(str_cat("libcudnn.so.", CUDNN_MAJOR), l.second);
    if (lib == nullptr) {
      l.second = str_cat("[cuda] cannot load cuDNN (libcudnn.so.", CUDNN_MAJOR,
                         "), which runs the convolutions and pooling: ", l.second, ".");
      return l;
    }
    l.second.clear();
    const char* missing = nullptr;
#define KILN_CUDNN_LOAD(f) \
  if (missing == nullptr && (l.first.f = reinterpret_cast<decltype(l.first.f)>(dlsym(lib, #f))) == nullptr) missing = #f;
    KILN_CUDNN_FUNCTIONS(KILN_CUDNN_LOAD)
#undef KILN_CUDNN_LOAD
    if (missing != nullptr) l.second = str_cat("[cuda] libcudnn.so.", CUDNN_MAJOR, " has no ", missing, ".");
    return l;
  }());
  if (!loaded->second.empty()) throw ConfigError(loaded->second);
  return loaded->first;
}

void check_dnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS)
    KILN_THROW(InternalError, "[cuda] ", what, " failed: ", cudnn().cudnnGetErrorString(s), ".");
}

// One cuDNN handle per GPU, made with its context current. A handle carries the stream of the
// call in progress, so a call sets its stream and runs under the handle's mutex.
struct Handle {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
};

Handle& handle_of(int ordinal) {
  static std::mutex mutex;
  static auto* handles = new std::map<int, std::unique_ptr<Handle>>();
  std::lock_guard lock(mutex);
  std::unique_ptr<Handle>& h = (*handles)[ordinal];
  if (h == nullptr) {
    auto made = std::make_unique<Handle>();
    check_dnn(cudnn().cudnnCreate(&made->handle), "cudnnCreate");
    h = std::move(made);
  }
  return *h;
}

cudnnDataType_t dnn_type(DType t) {
  switch (t) {
    case DType::kBF16: return CUDNN_DATA_BFLOAT16;
    case DType::kF16: return CUDNN_DATA_HALF;
    default: return CUDNN_DATA_FLOAT;
  }
}

bool is_dnn_float(DType t) { return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16; }

// cuDNN's 4-d descriptors count in int.
bool fits_int(const Dims& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n <= INT_MAX;
}

int i32(int64_t v) { return static_cast<int>(v); }

cudnnTensorDescriptor_t nhwc_desc(const Dims& d, DType t) {
  cudnnTensorDescriptor_t desc = nullptr;
  check_dnn(cudnn().cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor");
  check_dnn(cudnn().cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NHWC, dnn_type(t), i32(d[0]), i32(d[3]), i32(d[1]), i32(d[2])),
            "cudnnSetTensor4dDescriptor");
  return desc;
}

// (out - 1) * stride + extent <= in + 2 * pad < out * stride + extent: the output size
// cuDNN computes for a symmetric `pad`, floor((in + 2 pad - extent) / stride) + 1.
int64_t floor_output(int64_t in, int64_t pad, int64_t extent, int64_t stride) {
  return (in + 2 * pad - extent) / stride + 1;
}

// The algorithm of a convolution, found once per geometry and GPU.
struct Choice {
  int algo = 0;
  size_t workspace = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

// The first of cuDNN's heuristic ranking (best expected time first) that runs within
// kMaxWorkspaceBytes. f32 keeps FMA math: TF32 tensor cores would round the inputs to 10
// mantissa bits, and the CPU backend computes f32 convolutions in f32. `rank` and `workspace`
// are one direction's cudnnGet*Algorithm_v7 and cudnnGet*WorkspaceSize, which take the same
// descriptors `descs` in the same order.
template <typename Perf, typename Rank, typename Workspace, typename... Descs>
std::optional<Choice> choose(cudnnHandle_t h, cudnnConvolutionDescriptor_t conv, DType t, Rank rank, Workspace workspace,
                             Descs... descs) {
  Perf perf[16];
  int found = 0;
  check_dnn(rank(h, descs..., 16, &found, perf), "cudnnGetConvolution*Algorithm_v7");
  for (int i = 0; i < found; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    const cudnnMathType_t math = t == DType::kF32 ? CUDNN_FMA_MATH : perf[i].mathType;
    check_dnn(cudnn().cudnnSetConvolutionMathType(conv, math), "cudnnSetConvolutionMathType");
    size_t bytes = 0;
    if (workspace(h, descs..., perf[i].algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > CudnnConvolution::kMaxWorkspaceBytes)
      continue;
    return Choice{static_cast<int>(perf[i].algo), bytes, math};
  }
  return std::nullopt;
}

}  // namespace

std::optional<ConvGeometry> ConvGeometry::of(const ir::Instruction& conv, std::string& why) {
  const Opcode op = conv.opcode();
  if (op != Opcode::kConvolution && op != Opcode::kConvBackwardInput && op != Opcode::kConvBackwardFilter) {
    why = "not a convolution";
    return std::nullopt;
  }
  const Shape& a = conv.operand(0)->shape();
  const Shape& b = conv.operand(1)->shape();
  const Shape& r = conv.shape();
  ConvGeometry g;
  g.op = op;
  g.x = (op == Opcode::kConvBackwardInput ? r : a).dims();
  g.w = (op == Opcode::kConvBackwardFilter ? r : b).dims();
  g.y = (op == Opcode::kConvolution ? r : op == Opcode::kConvBackwardInput ? a : b).dims();
  g.dims = conv.attrs().conv;
  g.dtype = a.dtype();
  if (!is_dnn_float(g.dtype) || b.dtype() != g.dtype || r.dtype() != g.dtype) {
    why = str_cat(name(a.dtype()), ", ", name(b.dtype()), " -> ", name(r.dtype()),
                  ": cuDNN convolutions here take and give one of f32, bf16, f16");
    return std::nullopt;
  }
  g.op_x = g.x;
  ir::ConvDims& cd = g.dims;
  for (size_t i = 0; i < 2; ++i) {
    if (cd.padding_low[i] < 0 || cd.padding_high[i] < 0) {
      why = str_cat("padding ", cd.padding_low[i], "/", cd.padding_high[i], ": negative padding (cropping)");
      return std::nullopt;
    }
    // cuDNN pads both sides by the smaller amount; the excess goes into a padded copy of x.
    const int64_t shared = std::min(cd.padding_low[i], cd.padding_high[i]);
    g.explicit_low[i] = cd.padding_low[i] - shared;
    g.explicit_high[i] = cd.padding_high[i] - shared;
    g.x[1 + i] += g.explicit_low[i] + g.explicit_high[i];
    cd.padding_low[i] = cd.padding_high[i] = shared;
    const int64_t extent = (g.w[i] - 1) * cd.dilation[i] + 1;
    if (floor_output(g.x[1 + i], cd.padding_low[i], extent, cd.strides[i]) != g.y[1 + i]) {
      why = str_cat("output size ", g.y[1 + i], " along spatial dim ", i, " is not cuDNN's");
      return std::nullopt;
    }
  }
  if (!fits_int(g.x) || !fits_int(g.y) || !fits_int(g.w)) {
    why = "more than 2^31 elements in one tensor";
    return std::nullopt;
  }
  return g;
}

std::string ConvGeometry::label() const {
  return str_cat(ir::opcode_name(op), "(cudnn, x ", Shape(dtype, x),
                 padded_explicitly() ? str_cat(" padded from ", Shape(dtype, op_x)) : std::string(), ", w ", Shape(dtype, w), ")");
}

namespace {

// x and y NHWC, the tensors of a convolution or a pooling. Descriptors are made without a GPU
// (cuDNN checks them only against each other).
struct TensorPair {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  TensorPair(const Dims& xd, const Dims& yd, DType t) : x(nhwc_desc(xd, t)) {
    try {
      y = nhwc_desc(yd, t);
    } catch (...) {
      cudnn().cudnnDestroyTensorDescriptor(x);
      throw;
    }
  }
  ~TensorPair() {
    cudnn().cudnnDestroyTensorDescriptor(x);
    cudnn().cudnnDestroyTensorDescriptor(y);
  }
  TensorPair(const TensorPair&) = delete;
  TensorPair& operator=(const TensorPair&) = delete;
};

// A convolution's: x and y, w KRSC, the convolution itself.
struct ConvDescriptors : TensorPair {
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  explicit ConvDescriptors(const ConvGeometry& g) : TensorPair(g.x, g.y, g.dtype) {
    const Cudnn& d = cudnn();
    check_dnn(d.cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    // NHWC filters are KRSC: (F, KH, KW, C/groups).
    check_dnn(d.cudnnSetFilter4dDescriptor(w, dnn_type(g.dtype), CUDNN_TENSOR_NHWC, i32(g.w[3]), i32(g.w[2]), i32(g.w[0]),
                                           i32(g.w[1])),
              "cudnnSetFilter4dDescriptor");
    const ir::ConvDims& cd = g.dims;
    check_dnn(d.cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    // Cross-correlation (TensorFlow's conv2d), accumulating in f32 for every input type.
    check_dnn(d.cudnnSetConvolution2dDescriptor(conv, i32(cd.padding_low[0]), i32(cd.padding_low[1]), i32(cd.strides[0]),
                                                i32(cd.strides[1]), i32(cd.dilation[0]), i32(cd.dilation[1]),
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              "cudnnSetConvolution2dDescriptor");
    check_dnn(d.cudnnSetConvolutionGroupCount(conv, i32(cd.groups)), "cudnnSetConvolutionGroupCount");
    // The heuristics rank the algorithms of the descriptor's math type (see choose()).
    check_dnn(d.cudnnSetConvolutionMathType(conv, g.dtype == DType::kF32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
              "cudnnSetConvolutionMathType");
  }
  ~ConvDescriptors() {
    if (w != nullptr) cudnn().cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) cudnn().cudnnDestroyConvolutionDescriptor(conv);
  }
};

// A pooling's: x and y, and the window.
struct PoolDescriptors : TensorPair {
  cudnnPoolingDescriptor_t pool = nullptr;

  explicit PoolDescriptors(const PoolGeometry& g) : TensorPair(g.x, g.y, g.dtype) {
    const Cudnn& d = cudnn();
    check_dnn(d.cudnnCreatePoolingDescriptor(&pool), "cudnnCreatePoolingDescriptor");
    // Max: the deterministic variant, and NaN propagates (the reference counts NaN as the
    // maximum); mean: divided by the unpadded elements (Keras 'same' average pooling).
    const cudnnPoolingMode_t mode =
        g.kind == ir::ReduceKind::kMax ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    const ir::Window& w = g.window;
    check_dnn(d.cudnnSetPooling2dDescriptor(pool, mode, CUDNN_PROPAGATE_NAN, i32(w.size[1]), i32(w.size[2]),
                                            i32(w.padding_low[1]), i32(w.padding_low[2]), i32(w.strides[1]),
                                            i32(w.strides[2])),
              "cudnnSetPooling2dDescriptor");
  }
  ~PoolDescriptors() {
    if (pool != nullptr) cudnn().cudnnDestroyPoolingDescriptor(pool);
  }
};

// The NHWC dims of cuDNN's answer to query(&n, &c, &h, &w).
template <typename Query>
Dims nhwc_output(Query query, const char* what) {
  int n = 0, c = 0, h = 0, w = 0;
  check_dnn(query(&n, &c, &h, &w), what);
  return {n, h, w, c};
}

}  // namespace

Dims ConvGeometry::cudnn_output_dims() const {
  const ConvDescriptors desc(*this);
  return nhwc_output([&](int* n, int* c, int* h, int* wd) {
    return cudnn().cudnnGetConvolution2dForwardOutputDim(desc.conv, desc.x, desc.w, n, c, h, wd);
  }, "cudnnGetConvolution2dForwardOutputDim");
}

Dims PoolGeometry::cudnn_output_dims() const {
  const PoolDescriptors desc(*this);
  return nhwc_output([&](int* n, int* c, int* h, int* wd) {
    return cudnn().cudnnGetPooling2dForwardOutputDim(desc.pool, desc.x, n, c, h, wd);
  }, "cudnnGetPooling2dForwardOutputDim");
}

struct CudnnConvolution::State {
  explicit State(const ConvGeometry& g) : op(g.op), desc(g) {}
  Handle* handle = nullptr;
  Opcode op;
  ConvDescriptors desc;
  Choice choice;
};

CudnnConvolution::CudnnConvolution(const ConvGeometry& g, int ordinal) : s_(std::make_unique<State>(g)) {
  const Cudnn& d = cudnn();
  s_->handle = &handle_of(ordinal);
  const ir::ConvDims& cd = g.dims;
  static std::mutex cache_mutex;
  static auto* cache = new std::map<std::string, Choice>();
  const std::string key = str_cat(ordinal, " ", g.label(), " s", cd.strides[0], "x", cd.strides[1], " p", cd.padding_low[0],
                                  "x", cd.padding_low[1], " d", cd.dilation[0], "x", cd.dilation[1], " g", cd.groups);
  std::lock_guard lock(cache_mutex);
  if (auto it = cache->find(key); it != cache->end()) {
    s_->choice = it->second;
    check_dnn(d.cudnnSetConvolutionMathType(s_->desc.conv, s_->choice.math), "cudnnSetConvolutionMathType");
    return;
  }
  const cudnnHandle_t h = s_->handle->handle;
  const ConvDescriptors& s = s_->desc;
  const std::optional<Choice> choice =
      g.op == Opcode::kConvolution
          ? choose<cudnnConvolutionFwdAlgoPerf_t>(h, s.conv, g.dtype, d.cudnnGetConvolutionForwardAlgorithm_v7,
                                                  d.cudnnGetConvolutionForwardWorkspaceSize, s.x, s.w, s.conv, s.y)
      : g.op == Opcode::kConvBackwardInput
          ? choose<cudnnConvolutionBwdDataAlgoPerf_t>(h, s.conv, g.dtype, d.cudnnGetConvolutionBackwardDataAlgorithm_v7,
                                                      d.cudnnGetConvolutionBackwardDataWorkspaceSize, s.w, s.y, s.conv, s.x)
          : choose<cudnnConvolutionBwdFilterAlgoPerf_t>(h, s.conv, g.dtype, d.cudnnGetConvolutionBackwardFilterAlgorithm_v7,
                                                        d.cudnnGetConvolutionBackwardFilterWorkspaceSize, s.x, s.y, s.conv,
                                                        s.w);
  if (!choice)
    KILN_THROW(CompileError, "[cuda] cuDNN has no algorithm for ", g.label(), " within ", kMaxWorkspaceBytes >> 20,
               " MiB of workspace.");
  s_->choice = *choice;
  check_dnn(d.cudnnSetConvolutionMathType(s_->desc.conv, s_->choice.math), "cudnnSetConvolutionMathType");
  cache->emplace(key, *choice);
}

CudnnConvolution::~CudnnConvolution() = default;

size_t CudnnConvolution::workspace_bytes() const { return s_->choice.workspace; }

std::string CudnnConvolution::algorithm() const {
  return str_cat("algo ", s_->choice.algo, s_->choice.math == CUDNN_FMA_MATH ? ", fma" : ", tensor ops");
}

void CudnnConvolution::run(CUstream stream, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out, CUdeviceptr workspace) const {
  const Cudnn& d = cudnn();
  const ConvDescriptors& s = s_->desc;
  std::lock_guard lock(s_->handle->mutex);
  const cudnnHandle_t h = s_->handle->handle;
  check_dnn(d.cudnnSetStream(h, reinterpret_cast<cudaStream_t>(stream)), "cudnnSetStream");
  const float one = 1, zero = 0;
  const auto* pa = reinterpret_cast<const void*>(a);
  const auto* pb = reinterpret_cast<const void*>(b);
  auto* po = reinterpret_cast<void*>(out);
  auto* ws = reinterpret_cast<void*>(workspace);
  const int algo = s_->choice.algo;
  const size_t bytes = s_->choice.workspace;
  switch (s_->op) {
    case Opcode::kConvolution:
      check_dnn(d.cudnnConvolutionForward(h, &one, s.x, pa, s.w, pb, s.conv, static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                          ws, bytes, &zero, s.y, po),
                "cudnnConvolutionForward");
      break;
    case Opcode::kConvBackwardInput:
      check_dnn(d.cudnnConvolutionBackwardData(h, &one, s.w, pb, s.y, pa, s.conv,
                                               static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, bytes, &zero,
                                               s.x, po),
                "cudnnConvolutionBackwardData");
      break;
    case Opcode::kConvBackwardFilter:
      check_dnn(d.cudnnConvolutionBackwardFilter(h, &one, s.x, pa, s.y, pb, s.conv,
                                                 static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, bytes,
                                                 &zero, s.w, po),
                "cudnnConvolutionBackwardFilter");
      break;
#define KILN_SKIP_Contraction
#include "kiln/ir/opcode_cases.inc"
    case Opcode::kDotGeneral:
      KILN_CHECK(false, "ConvGeometry::of admits only convolutions, not ", ir::opcode_name(s_->op));
  }
}

std::optional<PoolGeometry> PoolGeometry::of(const ir::Instruction& pool, std::string& why) {
  const Opcode op = pool.opcode();
  if (op != Opcode::kReduceWindow && op != Opcode::kReduceWindowGrad) {
    why = "not a pooling";
    return std::nullopt;
  }
  PoolGeometry g;
  g.x = pool.operand(0)->shape().dims();
  g.y = (op == Opcode::kReduceWindow ? pool.shape() : pool.operand(1)->shape()).dims();
  g.window = pool.attrs().window;
  g.kind = pool.attrs().reduce_kind;
  g.dtype = pool.operand(0)->dtype();
  if (g.kind != ir::ReduceKind::kMax && g.kind != ir::ReduceKind::kMean) {
    why = str_cat(ir::reduce_kind_name(g.kind), " pooling");
    return std::nullopt;
  }
  if (!is_dnn_float(g.dtype)) {
    why = str_cat(name(g.dtype), ": cuDNN pools f32, bf16 and f16");
    return std::nullopt;
  }
  if (g.x.size() != 4) {
    why = str_cat("rank ", g.x.size(), ": cuDNN pools NHWC tensors");
    return std::nullopt;
  }
  const ir::Window& w = g.window;
  for (size_t d : {size_t{0}, size_t{3}})
    if (w.size[d] != 1 || w.strides[d] != 1 || w.padding_low[d] != 0 || w.padding_high[d] != 0) {
      why = str_cat("a window over dim ", d, ": cuDNN pools H and W only");
      return std::nullopt;
    }
  g.op_x = g.x;
  for (size_t d : {size_t{1}, size_t{2}}) {
    const int64_t low = w.padding_low[d], high = w.padding_high[d];
    if (low < 0 || high < 0 || (low != high && g.kind != ir::ReduceKind::kMax)) {
      why = str_cat("padding ", low, "/", high, ": cuDNN pads both sides alike",
                    low < 0 || high < 0 ? "" : ", and mean pooling's divisor excludes only its own padding");
      return std::nullopt;
    }
    // With padding < size no window lies wholly in padding (Kiln gives those -inf or 0).
    if (std::max(low, high) >= w.size[d]) {
      why = str_cat("padding ", std::max(low, high), " >= window ", w.size[d], " (windows wholly in padding)");
      return std::nullopt;
    }
    // Max: the excess over the smaller side is a -inf pad of x, which never wins a window.
    const int64_t pad = std::min(low, high);
    g.explicit_low[d] = low - pad;
    g.explicit_high[d] = high - pad;
    g.x[d] += g.explicit_low[d] + g.explicit_high[d];
    g.window.padding_low[d] = g.window.padding_high[d] = pad;
    if (floor_output(g.x[d], pad, w.size[d], w.strides[d]) != g.y[d]) {
      why = str_cat("output size ", g.y[d], " along dim ", d, " is not cuDNN's");
      return std::nullopt;
    }
  }
  if (!fits_int(g.x)) {
    why = "more than 2^31 elements";
    return std::nullopt;
  }
  return g;
}

std::string PoolGeometry::label() const {
  return str_cat(kind == ir::ReduceKind::kMax ? "max" : "mean", "_pool(cudnn, ", window.size[1], "x", window.size[2], " stride ",
                 window.strides[1], "x", window.strides[2], " pad ", window.padding_low[1], "x", window.padding_low[2],
                 padded_explicitly() ? str_cat(" padded from ", Shape(dtype, op_x)) : std::string(), ", ", name(dtype), ")");
}

struct CudnnPooling::State {
  explicit State(const PoolGeometry& g) : desc(g) {}
  Handle* handle = nullptr;
  PoolDescriptors desc;
};

CudnnPooling::CudnnPooling(const PoolGeometry& g, int ordinal) : s_(std::make_unique<State>(g)) {
  s_->handle = &handle_of(ordinal);
}

CudnnPooling::~CudnnPooling() = default;

void CudnnPooling::forward(CUstream stream, CUdeviceptr x, CUdeviceptr y) const {
  const Cudnn& d = cudnn();
  std::lock_guard lock(s_->handle->mutex);
  check_dnn(d.cudnnSetStream(s_->handle->handle, reinterpret_cast<cudaStream_t>(stream)), "cudnnSetStream");
  const float one = 1, zero = 0;
  check_dnn(d.cudnnPoolingForward(s_->handle->handle, s_->desc.pool, &one, s_->desc.x, reinterpret_cast<const void*>(x), &zero, s_->desc.y,
                                  reinterpret_cast<void*>(y)),
            "cudnnPoolingForward");
}

void CudnnPooling::backward(CUstream stream, CUdeviceptr x, CUdeviceptr y, CUdeviceptr dy, CUdeviceptr dx) const {
  const Cudnn& d = cudnn();
  std::lock_guard lock(s_->handle->mutex);
  check_dnn(d.cudnnSetStream(s_->handle->handle, reinterpret_cast<cudaStream_t>(stream)), "cudnnSetStream");
  const float one = 1, zero = 0;
  check_dnn(d.cudnnPoolingBackward(s_->handle->handle, s_->desc.pool, &one, s_->desc.y, reinterpret_cast<const void*>(y), s_->desc.y,
                                   reinterpret_cast<const void*>(dy), s_->desc.x, reinterpret_cast<const void*>(x), &zero, s_->desc.x,
                                   reinterpret_cast<void*>(dx)),
            "cudnnPoolingBackward");
}

std::string cudnn_version() {
  const size_t v = cudnn().cudnnGetVersion();
  return str_cat(v / 10000, ".", v % 10000 / 100, ".", v % 100);
}

}  // namespace kiln::cuda
