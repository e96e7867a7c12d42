// Helpers shared by the oneDNN convolution and pooling adapters: an operand bound to a
// memory in Kiln's layout plus, when the primitive wants another layout, a reorder; and the
// f32 widening of 16-bit operands (oneDNN 2.6 on AVX2 CPUs has no bf16/f16 kernels); the
// post-op for an output fusion's activation. Shared by the matmul adapter too.
#pragma once

#include <dnnl.hpp>

#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/core/host_tensor.h"

namespace kiln::cpu::onednn {

/// One primitive argument. `user` views Kiln's buffer (handle set per run); `inner` is the
/// layout the primitive chose, equal to `user` when no reorder is needed.
struct BoundArg {
  int arg = 0;  // DNNL_ARG_*
  Shape shape;  // the Kiln value (its dtype says whether to widen)
  dnnl::memory user, inner;
  dnnl::reorder reorder;  // user -> inner for inputs, inner -> user for the output
  bool reordered = false;

  /// `user_md` is Kiln's layout; `want_md` the primitive's. Reorders are built here, once.
  BoundArg(int which, const Shape& s, const dnnl::memory::desc& user_md, const dnnl::memory::desc& want_md,
           const dnnl::engine& engine, bool is_output)
      : arg(which), shape(s), user(user_md, engine, DNNL_MEMORY_NONE) {
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
  a.user.set_data_handle(as_f32(p, a.shape, keep));
  if (a.reordered) a.reorder.execute(stream, a.user, a.inner);
  args.insert({a.arg, a.inner});
}

/// Output side: `wide` is the f32 buffer a 16-bit result is computed into before narrowing.
inline void bind_output(BoundArg& a, void* out, HostTensor* wide, std::unordered_map<int, dnnl::memory>& args) {
  if (a.shape.dtype() != DType::kF32) *wide = HostTensor(a.shape.with_dtype(DType::kF32));
  a.user.set_data_handle(a.shape.dtype() == DType::kF32 ? out : wide->raw_data());
  args.insert({a.arg, a.inner});
}

/// After the primitive ran: reorders the output back and narrows a widened result into `out`.
inline void finish_output(BoundArg& a, void* out, const HostTensor& wide, dnnl::stream& stream) {
  if (a.reordered) a.reorder.execute(stream, a.inner, a.user);
  stream.wait();
  if (a.shape.dtype() != DType::kF32) {
    HostTensor narrowed = wide.astype(a.shape.dtype());
    std::memcpy(out, narrowed.raw_data(), static_cast<size_t>(narrowed.byte_size()));
  }
}

/// Row-major NHWC as oneDNN's logical NCHW dims.
inline dnnl::memory::desc nhwc(const Shape& s) {
  const Dims& d = s.dims();
  return dnnl::memory::desc({d[0], d[3], d[1], d[2]}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc);
}

}  // namespace kiln::cpu::onednn
