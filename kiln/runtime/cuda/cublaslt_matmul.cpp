#include "kiln/runtime/cuda/cublaslt_matmul_impl.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include "kiln/core/check.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"

#define KILN_CUBLASLT_FUNCTIONS(X)                                                                       \
  X(cublasLtCreate) X(cublasLtGetStatusString) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)        \
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
    default: return CUDA_R_32F;
  }
}

}  // namespace

std::optional<MatmulGeometry> MatmulGeometry::of(const ir::Instruction& dot) {
  const ir::DotDims& d = dot.attrs().dot;
  const Shape& l = dot.operand(0)->shape();
  const Shape& r = dot.operand(1)->shape();
  if (!d.lhs_batch.empty() || l.rank() != 2 || r.rank() != 2 || d.lhs_contracting.size() != 1 ||
      d.rhs_contracting.size() != 1 || l.dtype() != r.dtype())
    return std::nullopt;
  const DType t = l.dtype();
  if (t != DType::kF32 && t != DType::kBF16 && t != DType::kF16) return std::nullopt;
  MatmulGeometry g;
  g.lhs_transposed = d.lhs_contracting[0] == 0;
  g.rhs_transposed = d.rhs_contracting[0] == 1;
  g.m = l.dims()[g.lhs_transposed ? 1 : 0];
  g.k = l.dims()[g.lhs_transposed ? 0 : 1];
  g.n = r.dims()[g.rhs_transposed ? 0 : 1];
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
  check_lt(lt.cublasLtMatmulDescCreate(&s_->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
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
  const float one = 1, zero = 0;
  check_lt(lt.cublasLtMatmul(lt.handle, s_->desc, &one, reinterpret_cast<const void*>(rhs), s_->a,
                             reinterpret_cast<const void*>(lhs), s_->b, &zero, reinterpret_cast<void*>(out), s_->c,
                             reinterpret_cast<void*>(out), s_->c, &s_->algo, reinterpret_cast<void*>(workspace),
                             kWorkspaceBytes, reinterpret_cast<cudaStream_t>(stream)),
           "cublasLtMatmul");
}

std::string MatmulGeometry::label() const {
  return str_cat("matmul(cublasLt, ", m, "x", n, "x", k, ", ", name(input), bias || relu ? ", " : "",
                 bias ? "+bias" : "", relu ? "+relu" : "", ")");
}

}  // namespace kiln::cuda
