// oneDNN matmul adapter. Shapes legend: src (B, M, K), weights (B, K, N), dst (B, M, N),
// bias (1, 1, N); B, M, K, N are each a group of dot_general dims merged into one stride.
#include "kiln/runtime/cpu/onednn_matmul.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/core/host_tensor.h"
#include "kiln/ir/computation.h"
#include "kiln/runtime/cpu/onednn_util_impl.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;

// One merged group of dims: its total size and the stride of its last dim, if the group is
// row-major contiguous in the listed order.
struct Group {
  int64_t size = 1;
  int64_t stride = 1;
};

bool merge(const Dims& dims, const Dims& strides, const Dims& which, Group* g) {
  g->size = 1;
  g->stride = 1;
  if (which.empty()) return true;
  for (size_t i = which.size(); i-- > 0;) {
    size_t d = static_cast<size_t>(which[i]);
    if (i + 1 == which.size()) g->stride = strides[d];
    else if (dims[d] != 1 && strides[d] != g->stride * g->size) return false;
    g->size *= dims[d];
  }
  return true;
}

Dims row_major_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

Dims free_dims(int rank, const Dims& a, const Dims& b) {
  Dims f;
  for (int i = 0; i < rank; ++i)
    if (std::find(a.begin(), a.end(), i) == a.end() && std::find(b.begin(), b.end(), i) == b.end()) f.push_back(i);
  return f;
}

}  // namespace

class MatmulImpl {
 public:
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul primitive;
  memory src, weights, bias, dst;
  std::unordered_map<int, memory> args;  // built once; run() only swaps data handles
  bool has_bias = false;
  DType dtype = DType::kF32;  // of operands and result
  Shape lhs_shape, rhs_shape, out_shape, bias_shape;
};

MatmulKernel::MatmulKernel(std::unique_ptr<MatmulImpl> impl) : impl_(std::move(impl)) {}
MatmulKernel::~MatmulKernel() = default;

std::unique_ptr<MatmulKernel> MatmulKernel::create(const ir::Instruction& dot, bool bias,
                                                   compiler::EpilogueActivation activation) {
  const Shape& l = dot.operand(0)->shape();
  const Shape& r = dot.operand(1)->shape();
  const ir::DotDims& dd = dot.attrs().dot;
  const DType dtype = l.dtype();
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16) return nullptr;
  Dims lstr = row_major_strides(l.dims()), rstr = row_major_strides(r.dims());
  Group lb, lm, lk, rb, rk, rn;
  if (!merge(l.dims(), lstr, dd.lhs_batch, &lb) || !merge(r.dims(), rstr, dd.rhs_batch, &rb) ||
      !merge(l.dims(), lstr, dd.lhs_contracting, &lk) || !merge(r.dims(), rstr, dd.rhs_contracting, &rk) ||
      !merge(l.dims(), lstr, free_dims(l.rank(), dd.lhs_batch, dd.lhs_contracting), &lm) ||
      !merge(r.dims(), rstr, free_dims(r.rank(), dd.rhs_batch, dd.rhs_contracting), &rn))
    return nullptr;
  if (dd.lhs_batch.size() > 1 && lb.size > 1) return nullptr;  // a rare layout; reference path
  const int64_t B = lb.size, M = lm.size, K = lk.size, N = rn.size;
  auto impl = std::make_unique<MatmulImpl>();
  impl->dtype = dtype;
  impl->lhs_shape = l;
  impl->rhs_shape = r;
  impl->out_shape = dot.shape();
  impl->has_bias = bias;
  // Size-1 groups get the stride a contiguous layout would have (oneDNN checks them).
  const int64_t lm_stride = M == 1 ? K : lm.stride, lk_stride = K == 1 ? 1 : lk.stride;
  const int64_t rk_stride = K == 1 ? N : rk.stride, rn_stride = N == 1 ? 1 : rn.stride;
  const int64_t lb_stride = B == 1 ? M * K : lb.stride, rb_stride = B == 1 ? K * N : rb.stride;
  auto f32 = memory::data_type::f32;
  memory::desc src_md({B, M, K}, f32, memory::dims{lb_stride, lm_stride, lk_stride});
  memory::desc wei_md({B, K, N}, f32, memory::dims{rb_stride, rk_stride, rn_stride});
  memory::desc dst_md({B, M, N}, f32, memory::dims{M * N, N, 1});
  memory::desc bias_md({1, 1, N}, f32, memory::dims{N, N, 1});
  dnnl::primitive_attr attr;
  if (activation != compiler::EpilogueActivation::kNone) {
    std::optional<dnnl::algorithm> alg = onednn::eltwise_of(activation);
    if (!alg) return nullptr;
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, *alg, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  try {
    auto desc = bias ? dnnl::matmul::desc(src_md, wei_md, bias_md, dst_md)
                              : dnnl::matmul::desc(src_md, wei_md, dst_md);
    dnnl::matmul::primitive_desc pd(desc, attr, impl->engine);
    impl->primitive = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    KILN_THROW(CompileError, "[", dot.source().empty() ? "dot_general" : dot.source(),
               "] oneDNN cannot build a matmul for ", l, " x ", r, ": ", e.what());
  }
  impl->src = memory(src_md, impl->engine, DNNL_MEMORY_NONE);
  impl->weights = memory(wei_md, impl->engine, DNNL_MEMORY_NONE);
  impl->dst = memory(dst_md, impl->engine, DNNL_MEMORY_NONE);
  impl->args = {{DNNL_ARG_SRC, impl->src}, {DNNL_ARG_WEIGHTS, impl->weights}, {DNNL_ARG_DST, impl->dst}};
  if (bias) {
    impl->bias = memory(bias_md, impl->engine, DNNL_MEMORY_NONE);
    impl->args.insert({DNNL_ARG_BIAS, impl->bias});
  }
  impl->bias_shape = Shape(dtype, {N});
  return std::unique_ptr<MatmulKernel>(new MatmulKernel(std::move(impl)));
}

void MatmulKernel::run(const void* lhs, const void* rhs, const void* bias, void* out) const {
  MatmulImpl& m = *impl_;
  // 16-bit operands: widen to f32 copies (kept for this call only), narrow the result after.
  HostTensor wl, wr, wb, wo;
  m.src.set_data_handle(onednn::as_f32(lhs, m.lhs_shape, &wl));
  m.weights.set_data_handle(onednn::as_f32(rhs, m.rhs_shape, &wr));
  if (m.has_bias) m.bias.set_data_handle(onednn::as_f32(bias, m.bias_shape, &wb));
  if (m.dtype != DType::kF32) wo = HostTensor::uninitialized(m.out_shape.with_dtype(DType::kF32));
  m.dst.set_data_handle(m.dtype == DType::kF32 ? out : wo.raw_data());
  m.primitive.execute(m.stream, m.args);
  m.stream.wait();
  if (m.dtype != DType::kF32) {
    HostTensor narrowed = wo.astype(m.dtype);
    std::memcpy(out, narrowed.raw_data(), static_cast<size_t>(narrowed.byte_size()));
  }
}

}  // namespace kiln::cpu
