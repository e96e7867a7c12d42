#include "kiln/runtime/cuda/cublaslt_matmul_impl.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include "kiln/core/check.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"

#define KILN_CUBLASLT_FUNCTIONS(X)                                                                       \
  X(cublasLtCreate) X(cublasLtGetStatusString) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)        \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                                  \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

namespace kiln::cuda {
namespace {

struct CublasLt {
#define KILN_CUBLASLT_MEMBER(f) decltype(&::f) f = nullptr;
  KILN_CUBLASLT_FUNCTIONS(KILN_CUBLASLT_MEMBER)
#undef KILN_CUBLASLT_MEMBER
  cublasLtHandle_t handle = nullptr;
};

const CublasLt& cublaslt() {
  // Leaked on purpose, as the driver: plans destroyed at exit still reach cuBLASLt.
  static const auto* const loaded = new std::pair<CublasLt, std::string>([] {
    std::pair<CublasLt, std::string> l;
    void* lib = open_toolkit_library(str_cat("libcublasLt.so.", CUBLAS_VER_MAJOR), l.second);
    if (lib == nullptr) {
      l.second = str_cat("[cuda] cannot load cuBLASLt, which runs the matmuls: ", l.second, ".");
      return l;
    }
    l.second.clear();
#define KILN_CUBLASLT_LOAD(f)                                                                 \
  l.first.f = reinterpret_cast<decltype(l.first.f)>(dlsym(lib, #f));                          \
  if (l.first.f == nullptr) {                                                                 \
    l.second = str_cat("[cuda] libcublasLt.so.", CUBLAS_VER_MAJOR, " has no ", #f, ".");      \
    return l;                                                                                 \
  }
    KILN_CUBLASLT_FUNCTIONS(KILN_CUBLASLT_LOAD)
#undef KILN_CUBLASLT_LOAD
    if (cublasStatus_t s = l.first.cublasLtCreate(&l.first.handle); s != CUBLAS_STATUS_SUCCESS)
      l.second = str_cat("[cuda] cublasLtCreate failed: ", l.first.cublasLtGetStatusString(s), ".");
    return l;
  }());
  if (!loaded->second.empty()) throw ConfigError(loaded->second);
  return loaded->first;
}

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    KILN_THROW(InternalError, "[cuda] ", what, " failed: ", cublaslt().cublasLtGetStatusString(s), ".");
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kF16: return CUDA_R_16F;
    case DType::kF64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

}  // namespace

namespace {

// An operand's dims after its batch dims as two consecutive groups, [first..., second...]: the
// product of each group and whether the contracting group comes first. nullopt when the
// contracting dims are not one consecutive group at either end, in the order `contracting`
// lists them.
struct Grouped {
  int64_t free = 1, contracting = 1;
  bool contracting_first = false;
};
std::optional<Grouped> group_dims(const Shape& s, size_t batch, const Dims& contracting) {
  const int64_t rank = s.rank(), c = static_cast<int64_t>(contracting.size());
  const int64_t b = static_cast<int64_t>(batch);
  auto runs_from = [&](int64_t start) {
    for (int64_t i = 0; i < c; ++i)
      if (contracting[static_cast<size_t>(i)] != start + i) return false;
    return true;
  };
  Grouped g;
  if (runs_from(rank - c)) g.contracting_first = false;
  else if (runs_from(b)) g.contracting_first = true;
  else return std::nullopt;
  for (int64_t d = b; d < rank; ++d) {
    const bool contracted = g.contracting_first ? d < b + c : d >= rank - c;
    (contracted ? g.contracting : g.free) *= s.dims()[static_cast<size_t>(d)];
  }
  return g;
}

}  // namespace

std::optional<MatmulGeometry> MatmulGeometry::of(const ir::Instruction& dot, std::string& why) {
  const ir::DotDims& d = dot.attrs().dot;
  const Shape& l = dot.operand(0)->shape();
  const Shape& r = dot.operand(1)->shape();
  const DType t = l.dtype();
  if (r.dtype() != t || (t != DType::kF32 && t != DType::kBF16 && t != DType::kF16 && t != DType::kF64)) {
    why = str_cat(name(t), " x ", name(r.dtype()), ": cuBLASLt multiplies f32, bf16, f16 or f64 operands of one dtype");
    return std::nullopt;
  }
  const size_t b = d.lhs_batch.size();
  for (size_t i = 0; i < b; ++i)
    if (d.lhs_batch[i] != static_cast<int64_t>(i) || d.rhs_batch[i] != static_cast<int64_t>(i)) {
      why = "batch dims that are not the leading dims of both operands, in order";
      return std::nullopt;
    }
  // Consecutive free dims and consecutive contracting dims each act as one: a Dense layer over
  // [batch, time, features] is one [batch * time, features] matmul, its weight gradient one
  // with k = batch * time.
  const std::optional<Grouped> lg = group_dims(l, b, d.lhs_contracting), rg = group_dims(r, b, d.rhs_contracting);
  if (!lg || !rg) {
    why = "contracting dims that are not one run at either end of an operand's non-batch dims, in order";
    return std::nullopt;
  }
  MatmulGeometry g;
  for (size_t i = 0; i < b; ++i) g.batch *= l.dims()[i];
  g.lhs_transposed = lg->contracting_first;   // lhs stored [k, m]
  g.rhs_transposed = !rg->contracting_first;  // rhs stored [n, k] (a vector: [1, k])
  g.m = lg->free;
  g.k = lg->contracting;
  g.n = rg->free;
  g.input = t;
  g.output = dot.dtype();
  return g;
}

// Row-major out[m, n] is column-major out^T[n, m] = op(rhs)^T[n, k] . op(lhs)^T[k, m]: cuBLASLt's
// A is our rhs and its B our lhs, each read as the column-major transpose of its row-major self.
struct CublasLtMatmul::State {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

CublasLtMatmul::CublasLtMatmul(const MatmulGeometry& g) : g_(g), s_(std::make_unique<State>()) {
  const CublasLt& lt = cublaslt();
  const bool f64 = g.input == DType::kF64;
  check_lt(lt.cublasLtMatmulDescCreate(&s_->desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64 ? CUDA_R_64F : CUDA_R_32F),
           "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = g.rhs_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.lhs_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(lt.cublasLtMatmulDescSetAttribute(s_->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "set TRANSA");
  check_lt(lt.cublasLtMatmulDescSetAttribute(s_->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "set TRANSB");
  if (g.bias || g.relu) {
    const cublasLtEpilogue_t e = g.bias ? (g.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                        : CUBLASLT_EPILOGUE_RELU;
    check_lt(lt.cublasLtMatmulDescSetAttribute(s_->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), "set EPILOGUE");
  }
  if (g.bias) {
    const cudaDataType_t bt = cuda_type(g.output);
    check_lt(lt.cublasLtMatmulDescSetAttribute(s_->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt),
             "set BIAS_DATA_TYPE");
  }
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  // Stored (column-major) rows x cols and leading dimension of each operand.
  check_lt(lt.cublasLtMatrixLayoutCreate(&s_->a, cuda_type(g.input), g.rhs_transposed ? u(g.k) : u(g.n),
                                         g.rhs_transposed ? u(g.n) : u(g.k), g.rhs_transposed ? g.k : g.n),
           "cublasLtMatrixLayoutCreate(rhs)");
  check_lt(lt.cublasLtMatrixLayoutCreate(&s_->b, cuda_type(g.input), g.lhs_transposed ? u(g.m) : u(g.k),
                                         g.lhs_transposed ? u(g.k) : u(g.m), g.lhs_transposed ? g.m : g.k),
           "cublasLtMatrixLayoutCreate(lhs)");
  check_lt(lt.cublasLtMatrixLayoutCreate(&s_->c, cuda_type(g.output), u(g.n), u(g.m), g.n), "cublasLtMatrixLayoutCreate(out)");
  if (g.batch > 1) {  // the matrices of each operand one after another
    const int32_t count = static_cast<int32_t>(g.batch);
    const std::pair<cublasLtMatrixLayout_t, int64_t> strided[] = {{s_->a, g.k * g.n}, {s_->b, g.m * g.k}, {s_->c, g.m * g.n}};
    for (const auto& [layout, stride] : strided) {
      check_lt(lt.cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
               "set BATCH_COUNT");
      check_lt(lt.cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
               "set STRIDED_BATCH_OFFSET");
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(lt.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kWorkspaceBytes;
  lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s =
      lt.cublasLtMatmulAlgoGetHeuristic(lt.handle, s_->desc, s_->a, s_->b, s_->c, s_->c, pref, 1, &result, &found);
  lt.cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0)
    KILN_THROW(CompileError, "[cuda] cuBLASLt has no algorithm for ", g.label(), ": ",
               s != CUBLAS_STATUS_SUCCESS ? lt.cublasLtGetStatusString(s) : "none found", ".");
  s_->algo = result.algo;
}

CublasLtMatmul::~CublasLtMatmul() {
  const CublasLt& lt = cublaslt();
  for (cublasLtMatrixLayout_t l : {s_->a, s_->b, s_->c})
    if (l != nullptr) lt.cublasLtMatrixLayoutDestroy(l);
  if (s_->desc != nullptr) lt.cublasLtMatmulDescDestroy(s_->desc);
}

void CublasLtMatmul::run(CUstream stream, CUdeviceptr lhs, CUdeviceptr rhs, CUdeviceptr bias, CUdeviceptr out,
                         CUdeviceptr workspace) const {
  const CublasLt& lt = cublaslt();
  if (g_.bias) {
    void* p = reinterpret_cast<void*>(bias);
    check_lt(lt.cublasLtMatmulDescSetAttribute(s_->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof p), "set BIAS_POINTER");
  }
  // alpha and beta in the scale type: double for f64, else float.
  const float one = 1, zero = 0;
  const double one64 = 1, zero64 = 0;
  const bool f64 = g_.input == DType::kF64;
  check_lt(lt.cublasLtMatmul(lt.handle, s_->desc, f64 ? static_cast<const void*>(&one64) : &one,
                             reinterpret_cast<const void*>(rhs), s_->a, reinterpret_cast<const void*>(lhs), s_->b,
                             f64 ? static_cast<const void*>(&zero64) : &zero, reinterpret_cast<void*>(out), s_->c,
                             reinterpret_cast<void*>(out), s_->c, &s_->algo, reinterpret_cast<void*>(workspace),
                             kWorkspaceBytes, reinterpret_cast<cudaStream_t>(stream)),
           "cublasLtMatmul");
}

std::string MatmulGeometry::label() const {
  return str_cat("matmul(cublasLt, ", batch > 1 ? str_cat(batch, " x ") : "", m, "x", n, "x", k, ", ", name(input), bias || relu ? ", " : "",
                 bias ? "+bias" : "", relu ? "+relu" : "", ")");
}

}  // namespace kiln::cuda
