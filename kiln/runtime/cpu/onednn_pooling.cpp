// oneDNN pooling adapter, and the first-max loops: the max gradient, and the 16-bit max pool where
// oneDNN has no 16-bit pooling. Shape legend: x (N, H, W, C),
// y and dy (N, OH, OW, C); the window covers (1, KH, KW, 1) with strides (1, SH, SW, 1).
#include "kiln/runtime/cpu/onednn_pooling.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "kiln/core/half.h"
#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/cpu/onednn_util_impl.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;
using ir::Opcode;
using ir::ReduceKind;

// True when `w` pools only H and W of a rank-4 tensor and every output window holds at least
// one unpadded element (a window wholly in padding gives -inf/0 in Kiln, not in oneDNN).
bool is_spatial_pooling(const Shape& x, const Shape& y, const ir::Window& w) {
  if (x.rank() != 4) return false;
  for (size_t d : {size_t{0}, size_t{3}})
    if (w.size[d] != 1 || w.strides[d] != 1 || w.padding_low[d] != 0 || w.padding_high[d] != 0) return false;
  for (size_t d : {size_t{1}, size_t{2}}) {
    if (w.padding_low[d] < 0 || w.padding_high[d] < 0) return false;
    if (w.padding_low[d] >= w.size[d]) return false;  // the first window starts in padding
    if ((y.dims()[d] - 1) * w.strides[d] - w.padding_low[d] > x.dims()[d] - 1) return false;  // the last
  }
  return true;
}

// Each dy[n, oh, ow, c] goes to the first maximum of its window (NaN counts as the maximum, like
// the reference's `beats`). Windows that do not overlap write their taps directly (the max tap
// gets dy, the others 0); overlapping ones add into a zeroed dx. Parallel over the batch:
// windows never cross it. The channel loops are branch-free so they vectorize.
//
// Unroll-and-jam is off here: GCC 12 jams the tap loop into the channel loop, and under
// -mtune=generic (the portable build's tuning) the jammed loop runs scalar, 3-6x slower than
// the plain vectorized one (with -mtune=znver3, what -march=native gave here, it did not).
// It has no x86-64-v4 variant (cpu_isa_impl.h): it is memory-bound, AVX-512 gained 0-10%.
//
// T is f32, or a 16-bit type (BF16, F16) read into f32 registers and rounded once on the store
// of dx, for windows that do not overlap (overlapping ones add several dy into one dx, which
// the caller runs in f32 to round once). 16-bit values move as their bits (S = uint16_t), so
// the loops are plain integer work GCC vectorizes (on the BF16 struct it did not).
template <typename T>
using Storage = std::conditional_t<std::is_same_v<T, float>, float, uint16_t>;

template <typename T>
float load(Storage<T> v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else if constexpr (std::is_same_v<T, BF16>) return bf16_bits_to_f32(v);
  else return f16_bits_to_f32(v);
}

#if defined(__GNUC__) && !defined(__clang__)
#define KILN_NO_UNROLL_AND_JAM __attribute__((optimize("no-loop-unroll-and-jam")))
#else
#define KILN_NO_UNROLL_AND_JAM
#endif

// The geometry both max loops walk: x (N, H, W, C), y (N, OH, OW, C), the window's taps.
struct MaxWindows {
  int64_t n_count, h, wd, c_count, oh_count, ow_count, kh_count, kw_count, sh, sw, ph, pw;
  MaxWindows(const Shape& xs, const Shape& ys, const ir::Window& w)
      : n_count(xs.dims()[0]), h(xs.dims()[1]), wd(xs.dims()[2]), c_count(xs.dims()[3]), oh_count(ys.dims()[1]),
        ow_count(ys.dims()[2]), kh_count(w.size[1]), kw_count(w.size[2]), sh(w.strides[1]), sw(w.strides[2]),
        ph(w.padding_low[1]), pw(w.padding_low[2]) {}

  // Window (oh, ow)'s unpadded positions, row-major, as element offsets in an image; returns
  // how many (at least one: is_spatial_pooling).
  int32_t taps(int64_t oh, int64_t ow, int64_t* tap_at) const {
    int32_t taps = 0;
    for (int64_t kh = 0; kh < kh_count; ++kh) {
      const int64_t ih = oh * sh - ph + kh;
      if (ih < 0 || ih >= h) continue;
      for (int64_t kw = 0; kw < kw_count; ++kw) {
        const int64_t iw = ow * sw - pw + kw;
        if (iw >= 0 && iw < wd) tap_at[taps++] = (ih * wd + iw) * c_count;
      }
    }
    return taps;
  }

  // Per channel, the window's first maximum (NaN counts as the maximum, like the reference's
  // `beats`): its value in `b`, its tap in `which`. Branch-free, so the channel loops vectorize.
  // `which` null: only the values.
  template <typename T>
  KILN_NO_UNROLL_AND_JAM void first_max(const Storage<T>* xn, const int64_t* tap_at, int32_t taps, float* b,
                                        int32_t* which) const {
    const Storage<T>* x0 = xn + tap_at[0];
#pragma omp simd
    for (int64_t c = 0; c < c_count; ++c) b[c] = load<T>(x0[c]);
    if (which != nullptr) std::fill(which, which + c_count, 0);
    for (int32_t t = 1; t < taps; ++t) {
      const Storage<T>* xt = xn + tap_at[t];
      if (which == nullptr) {
#pragma omp simd
        for (int64_t c = 0; c < c_count; ++c) {
          const float v = load<T>(xt[c]);
          b[c] = b[c] < v || (v != v && b[c] == b[c]) ? v : b[c];
        }
        continue;
      }
#pragma omp simd
      for (int64_t c = 0; c < c_count; ++c) {
        const float v = load<T>(xt[c]);
        const bool take = b[c] < v || (v != v && b[c] == b[c]);
        b[c] = take ? v : b[c];
        which[c] = take ? t : which[c];
      }
    }
  }
};

template <typename T>
KILN_NO_UNROLL_AND_JAM void max_pool_grad(const T* x_t, const T* dy_t, T* dx_t, const Shape& xs, const Shape& ys,
                                          const ir::Window& w) {
  using S = Storage<T>;  // zero is all bits clear in every T
  const S* x = reinterpret_cast<const S*>(x_t);
  const S* dy = reinterpret_cast<const S*>(dy_t);
  S* dx = reinterpret_cast<S*>(dx_t);
  const MaxWindows g(xs, ys, w);
  const int64_t h = g.h, wd = g.wd, c_count = g.c_count, oh_count = g.oh_count, ow_count = g.ow_count;
  const bool overlap = g.kh_count > g.sh || g.kw_count > g.sw;
  // Every x element lies in exactly one window: nothing is left to zero.
  const bool covered = g.kh_count == g.sh && g.kw_count == g.sw && g.ph == 0 && g.pw == 0 && oh_count * g.sh == h &&
                       ow_count * g.sw == wd;
#pragma omp parallel if (g.n_count > 1)
  {
    std::vector<float> best(static_cast<size_t>(c_count));
    std::vector<int32_t> tap(static_cast<size_t>(c_count));
    std::vector<int64_t> tap_at(static_cast<size_t>(g.kh_count * g.kw_count));
    float* b = best.data();
    int32_t* which = tap.data();
#pragma omp for schedule(static)
    for (int64_t n = 0; n < g.n_count; ++n) {
      const S* xn = x + n * h * wd * c_count;
      S* dxn = dx + n * h * wd * c_count;
      if (!covered) std::fill(dxn, dxn + h * wd * c_count, S(0));
      for (int64_t oh = 0; oh < oh_count; ++oh)
        for (int64_t ow = 0; ow < ow_count; ++ow) {
          const int32_t taps = g.taps(oh, ow, tap_at.data());
          g.first_max<T>(xn, tap_at.data(), taps, b, which);
          const S* gy = dy + ((n * oh_count + oh) * ow_count + ow) * c_count;
          if constexpr (std::is_same_v<T, float>) {
            if (overlap) {
              for (int64_t c = 0; c < c_count; ++c) dxn[tap_at[static_cast<size_t>(which[c])] + c] += gy[c];
              continue;
            }
          }
          for (int32_t t = 0; t < taps; ++t) {
            S* d = dxn + tap_at[static_cast<size_t>(t)];
            if constexpr (std::is_same_v<S, float>) {
#pragma omp simd
              for (int64_t c = 0; c < c_count; ++c) d[c] = which[c] == t ? gy[c] : 0.0f;
            } else {  // a mask, not a select: GCC 12 vectorizes no 32-bit test choosing 16-bit values
              for (int64_t c = 0; c < c_count; ++c) d[c] = gy[c] & static_cast<uint16_t>(-static_cast<int32_t>(which[c] == t));
            }
          }
        }
    }
  }
}

// A 16-bit max pool where oneDNN has no 16-bit pooling: each y is its window's first maximum,
// read straight from the 16-bit storage. A maximum is one of its inputs, so its f32 value holds
// a 16-bit value exactly and converting it back is exact (a NaN comes back quieted, as every
// 16-bit rounding quiets it): the reference's bits. The widened path it replaces widened all of
// x and rounded y back, a tile at a time (3.4M values more per step on the convnet's first pool).
template <typename T>
KILN_NO_UNROLL_AND_JAM void max_pool_16bit(const T* x_t, T* y_t, const Shape& xs, const Shape& ys,
                                           const ir::Window& w) {
  using S = Storage<T>;
  const S* x = reinterpret_cast<const S*>(x_t);
  S* y = reinterpret_cast<S*>(y_t);
  const MaxWindows g(xs, ys, w);
#pragma omp parallel if (g.n_count > 1)
  {
    std::vector<float> best(static_cast<size_t>(g.c_count));
    std::vector<int64_t> tap_at(static_cast<size_t>(g.kh_count * g.kw_count));
    float* b = best.data();
#pragma omp for schedule(static)
    for (int64_t n = 0; n < g.n_count; ++n) {
      const S* xn = x + n * g.h * g.wd * g.c_count;
      for (int64_t oh = 0; oh < g.oh_count; ++oh)
        for (int64_t ow = 0; ow < g.ow_count; ++ow) {
          g.first_max<T>(xn, tap_at.data(), g.taps(oh, ow, tap_at.data()), b, /*which=*/nullptr);
          S* yo = y + ((n * g.oh_count + oh) * g.ow_count + ow) * g.c_count;
          if constexpr (std::is_same_v<T, BF16>) {  // an exact bf16 in f32: its top half, NaN quieted
#pragma omp simd
            for (int64_t c = 0; c < g.c_count; ++c) {
              uint32_t u;
              std::memcpy(&u, &b[c], 4);
              yo[c] = static_cast<S>((u >> 16) | ((u & 0x7fffffffu) > 0x7f800000u ? 0x0040u : 0u));
            }
          } else {
            for (int64_t c = 0; c < g.c_count; ++c) yo[c] = f32_to_f16_bits(b[c]);
          }
        }
    }
  }
}

}  // namespace

// One oneDNN pooling primitive over `batch` images, with its bound operand and result.
struct PoolingCall {
  onednn::TeamPrimitive primitive;
  std::optional<onednn::BoundArg> input, output;
  int64_t batch = 0;
};

// `s` with `n` images.
Shape with_batch(const Shape& s, int64_t n) {
  Dims d = s.dims();
  d[0] = n;
  return s.with_dims(d);
}

class PoolingImpl {
 public:
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // oneDNN paths: the forward (operand x) or the mean gradient (operand dy, at index 1), over
  // the whole batch or, widened from 16 bits, over tiles of `call.batch` images (`rest` is the
  // last, smaller one), so the f32 copies stay a tile's.
  PoolingCall call;
  std::optional<PoolingCall> rest;
  // The max gradient loop; 16-bit values with overlapping windows run it in f32 on tiles of
  // `grad_tile` images.
  bool max_grad = false;
  // A 16-bit max pool forward without oneDNN's 16-bit pooling: max_pool_16bit.
  bool max_16bit = false;
  bool overlap = false;
  int64_t grad_tile = 0;
  // The widened paths' f32 copies (null on the others): the calls' operands and results, or
  // one max gradient tile's x, dy and dx.
  std::shared_ptr<WidenScratch> scratch;

  std::vector<onednn::BoundArg*> widened_args(PoolingCall& c) { return {&*c.input, &*c.output}; }
  int64_t scratch_floats() {
    if (max_grad) return grad_tile * (2 * x_shape.num_elements() + dy_shape.num_elements()) / std::max<int64_t>(x_shape.dims()[0], 1);
    return onednn::widened_floats(widened_args(call));  // `rest` needs less
  }
  Shape x_shape, dy_shape;
  ir::Window window;
  std::string label;
  std::string isa;  // oneDNN's implementation
};

PoolingKernel::PoolingKernel(std::unique_ptr<PoolingImpl> impl) : impl_(std::move(impl)) {}
PoolingKernel::~PoolingKernel() = default;
const std::string& PoolingKernel::label() const { return impl_->label; }

bool PoolingKernel::takes_window(const ir::Instruction& inst) {
  const Shape& y = inst.opcode() == Opcode::kReduceWindow ? inst.shape() : inst.operand(1)->shape();
  return is_spatial_pooling(inst.operand(0)->shape(), y, inst.attrs().window);
}

std::unique_ptr<PoolingKernel> PoolingKernel::create(const ir::Instruction& inst, bool native_16bit,
                                                     std::shared_ptr<WidenScratch> scratch) {
  const Opcode op = inst.opcode();
  if (op != Opcode::kReduceWindow && op != Opcode::kReduceWindowGrad) return nullptr;
  const ReduceKind kind = inst.attrs().reduce_kind;
  if (kind != ReduceKind::kMax && kind != ReduceKind::kMean) return nullptr;
  const Shape& x = inst.operand(0)->shape();
  const Shape& y = op == Opcode::kReduceWindow ? inst.shape() : inst.operand(1)->shape();
  const DType t = x.dtype();
  if (t != DType::kF32 && t != DType::kBF16 && t != DType::kF16) return nullptr;
  const ir::Window& w = inst.attrs().window;
  if (!takes_window(inst)) return nullptr;

  auto impl = std::make_unique<PoolingImpl>();
  impl->x_shape = x;
  impl->dy_shape = y;
  impl->window = w;
  const int64_t batch = x.dims()[0];
  const int64_t tile = onednn::widened_batch_tile(batch, x.num_elements() / std::max<int64_t>(batch, 1));
  const std::string kind_name(ir::reduce_kind_name(kind));
  if (op == Opcode::kReduceWindowGrad && kind == ReduceKind::kMax) {
    impl->max_grad = true;
    impl->overlap = w.size[1] > w.strides[1] || w.size[2] > w.strides[2];
    const bool widened = t != DType::kF32 && impl->overlap;
    if (widened) {
      impl->grad_tile = tile;
      impl->scratch = scratch != nullptr ? scratch : std::make_shared<WidenScratch>();
      impl->scratch->reserve(impl->scratch_floats());
    }
    impl->label = str_cat("reduce_window_grad(max, first-max loop", widened ? ", widened" : "", ")");
    return std::unique_ptr<PoolingKernel>(new PoolingKernel(std::move(impl)));
  }
  const memory::dims strides = {w.strides[1], w.strides[2]}, kernel = {w.size[1], w.size[2]};
  const memory::dims pad_l = {w.padding_low[1], w.padding_low[2]}, pad_r = {w.padding_high[1], w.padding_high[2]};
  const auto alg = kind == ReduceKind::kMax ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  const dnnl::engine& eng = impl->engine;
  // The primitive over `n` images with operands in `dt`: the 16-bit type itself (oneDNN's
  // bf16/f16 pooling) or f32 (widened around the call). Throws dnnl::error when oneDNN has no
  // implementation.
  auto build = [&](memory::data_type dt, int64_t n) {
    const Shape xn = with_batch(x, n), yn = with_batch(y, n);
    const memory::desc x_md = onednn::nhwc(xn, dt), y_md = onednn::nhwc(yn, dt);
    PoolingCall c;
    c.batch = n;
    if (op == Opcode::kReduceWindow) {
      dnnl::pooling_forward::primitive_desc pd(
          dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, alg, x_md, y_md, strides, kernel, pad_l,
                                      pad_r),
          eng);
      c.primitive = onednn::TeamPrimitive::of(pd);
      c.input.emplace(DNNL_ARG_SRC, xn, x_md, pd.src_desc(), eng, false);
      c.output.emplace(DNNL_ARG_DST, yn, y_md, pd.dst_desc(), eng, true);
      impl->isa = pd.impl_info_str();
    } else {
      dnnl::pooling_forward::primitive_desc hint(
          dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, alg, x_md, y_md, strides, kernel, pad_l,
                                      pad_r),
          eng);
      dnnl::pooling_backward::primitive_desc pd(
          dnnl::pooling_backward::desc(alg, x_md, y_md, strides, kernel, pad_l, pad_r), eng, hint);
      c.primitive = onednn::TeamPrimitive::of(pd, hint);
      c.input.emplace(DNNL_ARG_DIFF_DST, yn, y_md, pd.diff_dst_desc(), eng, false);
      c.output.emplace(DNNL_ARG_DIFF_SRC, xn, x_md, pd.diff_src_desc(), eng, true);
      impl->isa = pd.impl_info_str();
    }
    return c;
  };
  bool widened = t != DType::kF32;
  if (t != DType::kF32 && native_16bit) {
    try {
      impl->call = build(onednn::data_type(t), batch);
      widened = onednn::is_reference_impl(impl->isa);
    } catch (const dnnl::error&) {  // no 16-bit pooling on this CPU: f32 from 16-bit storage
    }
  }
  if (widened && op == Opcode::kReduceWindow && kind == ReduceKind::kMax) {
    impl->max_16bit = true;
    impl->label = "reduce_window(max, first-max loop)";
    return std::unique_ptr<PoolingKernel>(new PoolingKernel(std::move(impl)));
  }
  try {
    if (t == DType::kF32) {
      impl->call = build(memory::data_type::f32, batch);
    } else if (widened) {
      impl->call = build(memory::data_type::f32, tile);
      if (tile > 0 && batch % tile != 0) impl->rest = build(memory::data_type::f32, batch % tile);
      impl->scratch = scratch != nullptr ? scratch : std::make_shared<WidenScratch>();
      impl->scratch->reserve(impl->scratch_floats());
    }
  } catch (const dnnl::error& e) {
    log(LogLevel::kDebug, str_cat("cpu: oneDNN rejects ", ir::describe(inst), ": ", e.what(), "; reference kernel"));
    return nullptr;
  }
  impl->label = str_cat(op == Opcode::kReduceWindow ? "reduce_window(" : "reduce_window_grad(", kind_name, ") (", impl->isa,
                        widened ? ", widened" : "", ")", widened && tile != batch ? str_cat(" x", (batch + tile - 1) / tile, " batch tiles") : "");
  return std::unique_ptr<PoolingKernel>(new PoolingKernel(std::move(impl)));
}

void PoolingKernel::run(const void* const* in, void* out) const {
  PoolingImpl& p = *impl_;
  const DType t = p.x_shape.dtype();
  const int64_t batch = p.x_shape.dims()[0];
  const int64_t x_image = p.x_shape.num_elements() / std::max<int64_t>(batch, 1);
  const int64_t y_image = p.dy_shape.num_elements() / std::max<int64_t>(batch, 1);
  if (p.max_16bit) {
    if (t == DType::kBF16) max_pool_16bit(static_cast<const BF16*>(in[0]), static_cast<BF16*>(out), p.x_shape, p.dy_shape, p.window);
    else max_pool_16bit(static_cast<const F16*>(in[0]), static_cast<F16*>(out), p.x_shape, p.dy_shape, p.window);
    return;
  }
  if (p.max_grad && (!p.overlap || t == DType::kF32)) {  // in and out in their own dtype, f32 registers
    if (t == DType::kF32)
      max_pool_grad(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]), static_cast<float*>(out),
                    p.x_shape, p.dy_shape, p.window);
    else if (t == DType::kBF16)
      max_pool_grad(static_cast<const BF16*>(in[0]), static_cast<const BF16*>(in[1]), static_cast<BF16*>(out), p.x_shape,
                    p.dy_shape, p.window);
    else
      max_pool_grad(static_cast<const F16*>(in[0]), static_cast<const F16*>(in[1]), static_cast<F16*>(out), p.x_shape,
                    p.dy_shape, p.window);
    return;
  }
  const size_t elem = size_of(t);
  std::optional<WidenScratch::Lease> lease;
  if (p.scratch != nullptr) lease.emplace(*p.scratch, p.scratch_floats());
  if (p.max_grad) {  // 16-bit, overlapping windows: f32 tiles of the batch (windows never cross images)
    float* wx = lease->data();
    float* wdx = wx + p.grad_tile * x_image;
    float* wdy = wdx + p.grad_tile * x_image;
    for (int64_t n0 = 0; n0 < batch; n0 += p.grad_tile) {
      const int64_t n = std::min(p.grad_tile, batch - n0);
      widen(static_cast<const char*>(in[0]) + static_cast<size_t>(n0 * x_image) * elem, t, n * x_image, wx);
      widen(static_cast<const char*>(in[1]) + static_cast<size_t>(n0 * y_image) * elem, t, n * y_image, wdy);
      max_pool_grad(wx, wdy, wdx, with_batch(p.x_shape, n), with_batch(p.dy_shape, n), p.window);
      narrow(wdx, n * x_image, t, static_cast<char*>(out) + static_cast<size_t>(n0 * x_image) * elem);
    }
    return;
  }
  if (lease) {
    onednn::point_into(p.widened_args(p.call), lease->data());
    if (p.rest) onednn::point_into(p.widened_args(*p.rest), lease->data());
  }
  // The forward reads x (operand 0) and writes y; the mean gradient reads only dy (operand 1)
  // and writes dx.
  const bool forward = p.call.input->arg == DNNL_ARG_SRC;
  const void* src = forward ? in[0] : in[1];
  const int64_t in_image = forward ? x_image : y_image, out_image = forward ? y_image : x_image;
  for (int64_t n0 = 0; n0 < batch; n0 += p.call.batch) {
    PoolingCall& c = batch - n0 >= p.call.batch ? p.call : *p.rest;
    std::unordered_map<int, memory> args;
    onednn::bind_input(*c.input, static_cast<const char*>(src) + static_cast<size_t>(n0 * in_image) * elem, p.stream, args);
    void* dst = static_cast<char*>(out) + static_cast<size_t>(n0 * out_image) * elem;
    onednn::bind_output(*c.output, dst, args);
    c.primitive.for_team().execute(p.stream, args);
    onednn::finish_output(*c.output, dst, p.stream);
  }
}

}  // namespace kiln::cpu
