// Helpers shared by the oneDNN convolution and pooling adapters: an operand bound to a
// memory in Kiln's layout plus, when the primitive wants another layout, a reorder; and the
// f32 widening of 16-bit operands where oneDNN has no bf16/f16 kernel (AVX2 CPUs); the
// post-op for an output fusion's activation. Shared by the matmul adapter too.
#pragma once

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/core/host_tensor.h"
#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"
#include "kiln/runtime/cpu/widen.h"

namespace kiln::cpu::onednn {

/// A primitive for the OpenMP team size of each run. oneDNN's convolutions and reorders split
/// their work for the thread count at creation (omp_get_max_threads() then) and open a team of
/// that size whatever omp_set_num_threads says later, so a step that the thread governor or a
/// logical device's share runs on fewer threads still ran them on all (issue 19: the
/// governor's one-thread probe of the convnet ran its convolutions on two, and lost). So each
/// team size gets its own primitive, created the first time that size runs. One per kernel, and
/// an executable runs one step at a time: no locking.
class TeamPrimitive {
 public:
  using Make = std::function<dnnl::primitive()>;
  TeamPrimitive() = default;
  /// `current`: the primitive for the current team size; `make` creates one for another.
  TeamPrimitive(dnnl::primitive current, Make make) : make_(std::move(make)) {
    by_threads_.emplace(omp_get_max_threads(), std::move(current));
  }

  /// The primitive of `pd` (created for the current team size); for another size, the same
  /// operation created again, except where oneDNN would pick another implementation or other
  /// layouts for it (the memories bound around it are the creation-time ones): then `pd`'s.
  /// `hint` is the forward primitive a backward one was created against.
  static TeamPrimitive of(const dnnl::primitive_desc_base& pd, const dnnl::primitive_desc_base& hint = {}) {
    const dnnl::primitive own(pd.get());
    return TeamPrimitive(own, [pd, hint, own] {
      const_dnnl_op_desc_t op = nullptr;
      dnnl::error::wrap_c_api(dnnl_primitive_desc_query(pd.get(), dnnl_query_op_d, 0, &op),
                              "could not query an operation descriptor");
      const dnnl::primitive_attr attr = pd.get_primitive_attr();
      dnnl::primitive_desc again(op, &attr, pd.get_engine(), hint ? hint.get() : nullptr, /*allow_empty=*/true);
      if (again) {
        do {
          if (std::string(again.impl_info_str()) != pd.impl_info_str()) continue;
          if (same_layouts(again, pd)) return dnnl::primitive(again.get());
          break;
        } while (again.next_impl());
      }
      log(LogLevel::kDebug, str_cat("cpu: oneDNN has no ", pd.impl_info_str(), " primitive with the same layouts for ",
                                    omp_get_max_threads(), " threads; the one for another team size runs"));
      return own;
    });
  }

  /// A reorder from `from`'s layout to `to`'s (run with DNNL_ARG_FROM and DNNL_ARG_TO).
  static TeamPrimitive reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to, const dnnl::engine& e) {
    auto make = [from, to, e]() -> dnnl::primitive { return dnnl::reorder(dnnl::reorder::primitive_desc(e, from, e, to)); };
    return TeamPrimitive(make(), make);
  }

  /// The primitive for omp_get_max_threads() threads. Should oneDNN fail to create it, the
  /// one made for another team size runs (on that team): a team size is a speed choice, never
  /// an error.
  const dnnl::primitive& for_team() {
    const int threads = omp_get_max_threads();
    auto it = by_threads_.find(threads);
    if (it != by_threads_.end()) return it->second;
    dnnl::primitive p = by_threads_.begin()->second;
    try {
      p = make_();
    } catch (const dnnl::error& e) {
      log(LogLevel::kDebug, str_cat("cpu: oneDNN cannot create a primitive for ", threads, " threads: ", e.what()));
    }
    return by_threads_.emplace(threads, std::move(p)).first->second;
  }

 private:
  static bool same_layouts(const dnnl::primitive_desc_base& a, const dnnl::primitive_desc_base& b) {
    for (int i = 0; i < 2; ++i)
      if (a.src_desc(i) != b.src_desc(i) || a.weights_desc(i) != b.weights_desc(i) || a.dst_desc(i) != b.dst_desc(i) ||
          a.diff_src_desc(i) != b.diff_src_desc(i) || a.diff_weights_desc(i) != b.diff_weights_desc(i) ||
          a.diff_dst_desc(i) != b.diff_dst_desc(i))
        return false;
    return a.workspace_desc() == b.workspace_desc();
  }

  Make make_;
  std::map<int, dnnl::primitive> by_threads_;
};

/// One primitive argument. `user` views Kiln's buffer (handle set per run); `inner` is the
/// layout the primitive chose, equal to `user` when no reorder is needed.
struct BoundArg {
  int arg = 0;  // DNNL_ARG_*
  Shape shape;  // the Kiln value
  bool widen = false;  // a 16-bit value the primitive sees as f32 (user_md is f32)
  dnnl::memory user, inner;
  TeamPrimitive reorder;  // user -> inner for inputs, inner -> user for the output
  bool reordered = false;
  // Where a widened value's f32 copy goes in this run: the caller points it into its
  // WidenScratch lease (point_into) before binding.
  float* wide = nullptr;

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
    reorder = is_output ? TeamPrimitive::reorder(want_md, user_md, engine) : TeamPrimitive::reorder(user_md, want_md, engine);
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

/// The f32 values `args` need for their widened copies.
inline int64_t widened_floats(const std::vector<BoundArg*>& args) {
  int64_t n = 0;
  for (const BoundArg* a : args) n += a->widen ? a->shape.num_elements() : 0;
  return n;
}

/// Points each widened arg's copy at its own part of `scratch` (widened_floats(args) floats).
inline void point_into(const std::vector<BoundArg*>& args, float* scratch) {
  for (BoundArg* a : args)
    if (a->widen) {
      a->wide = scratch;
      scratch += a->shape.num_elements();
    }
}

/// Binds an input (widened and reordered as needed) into `args`.
inline void bind_input(BoundArg& a, const void* p, dnnl::stream& stream, std::unordered_map<int, dnnl::memory>& args) {
  if (a.widen) cpu::widen(p, a.shape.dtype(), a.shape.num_elements(), a.wide);
  a.user.set_data_handle(a.widen ? a.wide : const_cast<void*>(p));
  if (a.reordered) a.reorder.for_team().execute(stream, {{DNNL_ARG_FROM, a.user}, {DNNL_ARG_TO, a.inner}});
  args.insert({a.arg, a.inner});
}

/// Output side: a 16-bit result is computed into the f32 `wide` copy, narrowed by finish_output.
inline void bind_output(BoundArg& a, void* out, std::unordered_map<int, dnnl::memory>& args) {
  a.user.set_data_handle(a.widen ? a.wide : out);
  args.insert({a.arg, a.inner});
}

/// After the primitive ran: reorders the output back and narrows a widened result into `out`.
inline void finish_output(BoundArg& a, void* out, dnnl::stream& stream) {
  if (a.reordered) a.reorder.for_team().execute(stream, {{DNNL_ARG_FROM, a.inner}, {DNNL_ARG_TO, a.user}});
  stream.wait();
  if (a.widen) cpu::narrow(a.wide, a.shape.num_elements(), a.shape.dtype(), out);
}

/// The f32 copies a widened 16-bit primitive makes per tile of the batch (the larger of its
/// input and output): a tile stays in the caches, never a whole activation.
constexpr int64_t kWidenedTileBytes = int64_t{2} << 20;

/// Images per tile of a widened primitive over `batch` images of `floats_per_image` f32 values
/// (the larger of its input and output).
inline int64_t widened_batch_tile(int64_t batch, int64_t floats_per_image) {
  if (batch < 1) return batch;
  return std::clamp<int64_t>(kWidenedTileBytes / std::max<int64_t>(floats_per_image * 4, 1), 1, batch);
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
