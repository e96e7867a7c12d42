// Helpers shared by the oneDNN convolution and pooling adapters: an operand bound to a
// memory in Kiln's layout plus, when the primitive wants another layout, a reorder; and the
// f32 widening of 16-bit operands where oneDNN has no bf16/f16 kernel (AVX2 CPUs); the
// post-op for an output fusion's activation. Shared by the matmul adapter too.
#pragma once

#include <dnnl.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/core/host_tensor.h"

namespace kiln::cpu::onednn {

/// One primitive argument. `user` views Kiln's buffer (handle set per run); `inner` is the
/// layout the primitive chose, equal to `user` when no reorder is needed.
struct BoundArg {
  int arg = 0;  // DNNL_ARG_*
  Shape shape;  // the Kiln value
  bool widen = false;  // a 16-bit value the primitive sees as f32 (user_md is f32)
  dnnl::memory user, inner;
  dnnl::reorder reorder;  // user -> inner for inputs, inner -> user for the output
  bool reordered = false;

  /// `user_md` is Kiln's layout; `want_md` the primitive's. Reorders are built here, once.
  BoundArg(int which, const Shape& s, const dnnl::memory::desc& user_md, const dnnl::memory::desc& want_md,
           const dnnl::engine& engine, bool is_output)
      : arg(which), shape(s), user(user_md, engine, DNNL_MEMORY_NONE) {
    widen = s.dtype() != DType::kF32 && user_md.data_type() == dnnl::memory::data_type::f32;
    reordered = !(user_md == want_md);
    if (!reordered) {
      inner = user;
      return;
    }
    inner = dnnl::memory(want_md, engine);  // oneDNN owns this buffer
    reorder = is_output ? dnnl::reorder(inner, user) : dnnl::reorder(user, inner);
  }
};

/// The oneDNN post-op for an output fusion's activation; nullopt for none.
inline std::optional<dnnl::algorithm> eltwise_of(compiler::EpilogueActivation a) {
  switch (a) {
    case compiler::EpilogueActivation::kRelu: return dnnl::algorithm::eltwise_relu;
    case compiler::EpilogueActivation::kTanh: return dnnl::algorithm::eltwise_tanh;
    case compiler::EpilogueActivation::kLogistic: return dnnl::algorithm::eltwise_logistic;
    case compiler::EpilogueActivation::kExp: return dnnl::algorithm::eltwise_exp;
    case compiler::EpilogueActivation::kLog: return dnnl::algorithm::eltwise_log;
    case compiler::EpilogueActivation::kSqrt: return dnnl::algorithm::eltwise_sqrt;
    case compiler::EpilogueActivation::kAbs: return dnnl::algorithm::eltwise_abs;
    case compiler::EpilogueActivation::kNone: break;
  }
  return std::nullopt;
}

/// "relu", "tanh", ... for step labels; empty for none.
inline std::string_view activation_name(compiler::EpilogueActivation a) {
  switch (a) {
    case compiler::EpilogueActivation::kRelu: return "relu";
    case compiler::EpilogueActivation::kTanh: return "tanh";
    case compiler::EpilogueActivation::kLogistic: return "logistic";
    case compiler::EpilogueActivation::kExp: return "exp";
    case compiler::EpilogueActivation::kLog: return "log";
    case compiler::EpilogueActivation::kSqrt: return "sqrt";
    case compiler::EpilogueActivation::kAbs: return "abs";
    case compiler::EpilogueActivation::kNone: break;
  }
  return "";
}

/// A pointer to `p` (of `s`) as f32: `p` itself, or a widened copy kept in `keep`.
inline void* as_f32(const void* p, const Shape& s, HostTensor* keep) {
  if (s.dtype() == DType::kF32) return const_cast<void*>(p);
  *keep = HostTensor::view(s, const_cast<void*>(p)).astype(DType::kF32);
  return keep->raw_data();
}

/// Binds inputs (widened and reordered as needed) into `args`; `keep` holds widened copies.
inline void bind_input(BoundArg& a, const void* p, dnnl::stream& stream, HostTensor* keep,
                       std::unordered_map<int, dnnl::memory>& args) {
  a.user.set_data_handle(a.widen ? as_f32(p, a.shape, keep) : const_cast<void*>(p));
  if (a.reordered) a.reorder.execute(stream, a.user, a.inner);
  args.insert({a.arg, a.inner});
}

/// Output side: `wide` is the f32 buffer a 16-bit result is computed into before narrowing.
inline void bind_output(BoundArg& a, void* out, HostTensor* wide, std::unordered_map<int, dnnl::memory>& args) {
  if (a.widen) *wide = HostTensor(a.shape.with_dtype(DType::kF32));
  a.user.set_data_handle(a.widen ? wide->raw_data() : out);
  args.insert({a.arg, a.inner});
}

/// After the primitive ran: reorders the output back and narrows a widened result into `out`.
inline void finish_output(BoundArg& a, void* out, const HostTensor& wide, dnnl::stream& stream) {
  if (a.reordered) a.reorder.execute(stream, a.inner, a.user);
  stream.wait();
  if (a.widen) {
    HostTensor narrowed = wide.astype(a.shape.dtype());
    std::memcpy(out, narrowed.raw_data(), static_cast<size_t>(narrowed.byte_size()));
  }
}

/// oneDNN's data type for a Kiln float dtype (f32 for anything else).
inline dnnl::memory::data_type data_type(DType t) {
  switch (t) {
    case DType::kBF16: return dnnl::memory::data_type::bf16;
    case DType::kF16: return dnnl::memory::data_type::f16;
    default: return dnnl::memory::data_type::f32;
  }
}

/// oneDNN's reference implementations are correct but orders of magnitude slower than its jit
/// kernels: a 16-bit "ref" primitive counts as no 16-bit kernel (the f32 path runs instead).
inline bool is_reference_impl(const std::string& impl_info) { return impl_info.rfind("ref", 0) == 0; }

/// Row-major NHWC as oneDNN's logical NCHW dims, in `dt` (f32: widened 16-bit values).
inline dnnl::memory::desc nhwc(const Shape& s, dnnl::memory::data_type dt = dnnl::memory::data_type::f32) {
  const Dims& d = s.dims();
  return dnnl::memory::desc({d[0], d[3], d[1], d[2]}, dt, dnnl::memory::format_tag::nhwc);
}

}  // namespace kiln::cpu::onednn
