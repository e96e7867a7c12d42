// oneDNN matmul adapter. Shapes legend: src (B, M, K), weights (B, K, N), dst (B, M, N),
// bias (1, 1, N); B, M, K, N are each a group of dot_general dims merged into one stride.
#include "kiln/runtime/cpu/onednn_matmul.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <tuple>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/core/half.h"
#include "kiln/core/logging.h"
#include "kiln/ir/computation.h"
#include "kiln/runtime/cpu/contraction_decisions.h"
#include "kiln/runtime/cpu/cpu_isa_impl.h"
#include "kiln/runtime/cpu/fixed_order_gemm.h"
#include "kiln/runtime/cpu/onednn_util_impl.h"
#include "kiln/runtime/cpu/widen.h"

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

// The problem as strides (in elements) over the operands' buffers.
struct Geometry {
  int64_t B = 1, M = 1, K = 1, N = 1;
  int64_t lb = 0, lm = 0, lk = 0;  // src (B, M, K)
  int64_t rb = 0, rk = 0, rn = 0;  // weights (B, K, N)
};

// Widened path tiles: up to kTile rows of src and columns of weights widened per tile, fewer
// where (rows + cols) * K + rows * cols floats would pass kTileFloats (16 MiB). Large tiles
// matter: oneDNN's f32 gemm picks its packing (copy) kernels only for large enough problems
// (on AVX2, 1/M + 1/N < 0.0038), 20% faster on W3's 512x1024x1024 than the no-copy kernel
// that tiles of 256 x 512 got. The scratch is shared by the executable's kernels (WidenScratch).
constexpr int64_t kTile = 1024, kTileFloats = int64_t{4} << 20;

// The widened path's tile rows and columns for (M, K) x (K, N).
std::pair<int64_t, int64_t> tile_size(int64_t M, int64_t K, int64_t N) {
  int64_t tr = std::min(kTile, M), tc = std::min(kTile, N);
  while ((tr + tc) * K + tr * tc > kTileFloats && (tr > 64 || tc > 64)) {
    if (tr >= tc) tr = (tr + 1) / 2;
    else tc = (tc + 1) / 2;
  }
  return {tr, tc};
}

// How a widened tile keeps an operand: in the operand's own order (row-major or transposed:
// contiguous runs in, contiguous runs out, oneDNN takes either by strides), or gathered
// element by element when neither stride is 1.
enum class TileLayout { kRowMajor, kTransposed, kGathered };

// A (rows, cols) operand with element strides (rs, cs) as a tile: row-major when its rows are
// contiguous, transposed when its columns are.
TileLayout tile_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1 || cols == 1) return TileLayout::kRowMajor;
  if (rs == 1 || rows == 1) return TileLayout::kTransposed;
  return TileLayout::kGathered;
}

// The tile's f32 strides (row, col) for `layout`.
std::pair<int64_t, int64_t> tile_strides(TileLayout layout, int64_t rows, int64_t cols) {
  return layout == TileLayout::kTransposed ? std::pair<int64_t, int64_t>{1, rows} : std::pair<int64_t, int64_t>{cols, 1};
}

// `n` rows of `m` values from `src` (row stride `ld`) as f32 into `dst` (row stride `m`): `t`
// values widened, or (`source` f32) f32 values rounded to `t`.
void to_f32_rows(const void* src, DType source, DType t, int64_t n, int64_t m, int64_t ld, float* dst) {
  if (source == DType::kF32) round_rows(static_cast<const float*>(src), t, n, m, ld, dst, m);
  else widen_rows(src, t, n, m, ld, dst, m);
}

// Widens the (rows, cols) block at `src` (element strides rs, cs) into `dst` laid out as
// `layout` says; `source` is what `src` holds (`t`, or f32 to round to `t`).
void widen_tile(const void* src, DType source, DType t, TileLayout layout, int64_t rows, int64_t cols, int64_t rs,
                int64_t cs, float* dst) {
  switch (layout) {
    case TileLayout::kRowMajor: to_f32_rows(src, source, t, rows, cols, rs, dst); return;
    case TileLayout::kTransposed: to_f32_rows(src, source, t, cols, rows, cs, dst); return;
    case TileLayout::kGathered: {
      const size_t elem = size_of(source);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          to_f32_rows(static_cast<const char*>(src) + static_cast<size_t>(r * rs + c * cs) * elem, source, t, 1, 1, 1,
                      dst + r * cols + c);
      return;
    }
  }
}

}  // namespace

class MatmulImpl {
 public:
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  MatmulPath path = MatmulPath::kF32;
  std::string isa;
  Geometry g;
  bool has_bias = false;
  compiler::EpilogueActivation activation = compiler::EpilogueActivation::kNone;
  DType dtype = DType::kF32;  // of operands and result
  // kF32 and kNative: one primitive over the whole problem. Per team size (TeamPrimitive):
  // oneDNN's AVX2 gemm with packing, like its convolutions, keeps the thread count it was
  // created with.
  onednn::TeamPrimitive primitive;
  memory src, weights, bias, dst;
  std::unordered_map<int, memory> args;  // built once; run() only swaps data handles
  // kWidened: f32 primitives over (rows, cols) tiles, one per tile size that occurs; each
  // operand's tile keeps its layout (lhs_tile, rhs_tile).
  struct Tile {
    onednn::TeamPrimitive primitive;
    memory src, weights, bias, dst;
    std::unordered_map<int, memory> args;
  };
  std::map<std::pair<int64_t, int64_t>, Tile> tiles;
  TileLayout lhs_tile = TileLayout::kRowMajor, rhs_tile = TileLayout::kRowMajor;
  // What each operand holds: `dtype` values, or f32 ones rounded to `dtype` as they widen.
  DType lhs_source = DType::kF32, rhs_source = DType::kF32, bias_source = DType::kF32;
  int64_t tile_rows = 0, tile_cols = 0;
  // The widened operands, result and bias.
  std::shared_ptr<WidenScratch> scratch;
  bool fixed_order = false;  // widened tiles computed by fixed_order_gemm instead of oneDNN

  void run_whole(const void* lhs, const void* rhs, const void* b, void* out) {
    src.set_data_handle(const_cast<void*>(lhs));
    weights.set_data_handle(const_cast<void*>(rhs));
    if (has_bias) bias.set_data_handle(const_cast<void*>(b));
    dst.set_data_handle(out);
    primitive.for_team().execute(stream, args);
    stream.wait();
  }

  int64_t scratch_floats() const {
    return tile_rows * g.K + g.K * tile_cols + tile_rows * tile_cols + (has_bias ? g.N : 0);
  }

  void run_widened(const void* lhs, const void* rhs, const void* b, void* out) {
    const int64_t tr = tile_rows, tc = tile_cols;
    WidenScratch::Lease lease(*scratch, scratch_floats());
    float* wl = lease.data();
    float* wr = wl + tr * g.K;
    float* wo = wr + g.K * tc;
    float* wb = wo + tr * tc;
    if (has_bias) widen_tile(b, bias_source, dtype, TileLayout::kRowMajor, 1, g.N, g.N, 1, wb);
    const size_t elem = size_of(dtype), lhs_elem = size_of(lhs_source), rhs_elem = size_of(rhs_source);
    for (int64_t bi = 0; bi < g.B; ++bi) {
      const char* l = static_cast<const char*>(lhs) + static_cast<size_t>(bi * g.lb) * lhs_elem;
      const char* r = static_cast<const char*>(rhs) + static_cast<size_t>(bi * g.rb) * rhs_elem;
      char* o = static_cast<char*>(out) + static_cast<size_t>(bi * g.M * g.N) * elem;
      for (int64_t n0 = 0; n0 < g.N; n0 += tc) {
        const int64_t cols = std::min(tc, g.N - n0);
        widen_tile(r + static_cast<size_t>(n0 * g.rn) * rhs_elem, rhs_source, dtype, rhs_tile, g.K, cols, g.rk, g.rn, wr);
        for (int64_t m0 = 0; m0 < g.M; m0 += tr) {
          const int64_t rows = std::min(tr, g.M - m0);
          widen_tile(l + static_cast<size_t>(m0 * g.lm) * lhs_elem, lhs_source, dtype, lhs_tile, rows, g.K, g.lm, g.lk, wl);
          if (fixed_order) {  // rhs_tile is row-major here (create)
            const auto [tile_lm, tile_lk] = tile_strides(lhs_tile, rows, g.K);
            fixed_order_gemm({.a = wl, .lm = tile_lm, .lk = tile_lk, .w = wr, .ldw = cols, .c = wo, .ldc = cols,
                              .M = rows, .N = cols, .K = g.K, .bias = has_bias ? wb + n0 : nullptr,
                              .activation = activation});
          } else {
            Tile& t = tiles.at({rows, cols});
            t.src.set_data_handle(wl);
            t.weights.set_data_handle(wr);
            if (has_bias) t.bias.set_data_handle(wb + n0);
            t.dst.set_data_handle(wo);
            t.primitive.for_team().execute(stream, t.args);
            stream.wait();
          }
          narrow_rows(wo, rows, cols, cols, dtype, o + static_cast<size_t>(m0 * g.N + n0) * elem, g.N);
        }
      }
    }
  }

  // f32 operands, batch-invariant: Kiln's fixed-order GEMM per batch entry; weights whose
  // columns are not contiguous are packed first (a copy: the sums are unchanged).
  void run_fixed_order_f32(const void* lhs, const void* rhs, const void* b, void* out) {
    std::vector<float> packed(g.rn == 1 ? 0 : static_cast<size_t>(g.K * g.N));
    for (int64_t bi = 0; bi < g.B; ++bi) {
      const float* l = static_cast<const float*>(lhs) + bi * g.lb;
      const float* r = static_cast<const float*>(rhs) + bi * g.rb;
      int64_t ldw = g.rk;
      if (g.rn != 1) {
        for (int64_t k = 0; k < g.K; ++k)
          for (int64_t n = 0; n < g.N; ++n) packed[static_cast<size_t>(k * g.N + n)] = r[k * g.rk + n * g.rn];
        r = packed.data();
        ldw = g.N;
      }
      fixed_order_gemm({.a = l, .lm = g.lm, .lk = g.lk, .w = r, .ldw = ldw,
                        .c = static_cast<float*>(out) + bi * g.M * g.N, .ldc = g.N, .M = g.M, .N = g.N, .K = g.K,
                        .bias = has_bias ? static_cast<const float*>(b) : nullptr, .activation = activation});
    }
  }

  void run(const void* lhs, const void* rhs, const void* b, void* out) {
    switch (path) {
      case MatmulPath::kWidened: return run_widened(lhs, rhs, b, out);
      case MatmulPath::kFixedOrder:
        if (dtype == DType::kF32) return run_fixed_order_f32(lhs, rhs, b, out);
        return run_widened(lhs, rhs, b, out);
      case MatmulPath::kF32:
      case MatmulPath::kNative: return run_whole(lhs, rhs, b, out);
    }
  }
};

const char* matmul_path_name(MatmulPath p) {
  switch (p) {
    case MatmulPath::kF32: return "f32";
    case MatmulPath::kNative: return "native";
    case MatmulPath::kWidened: return "widened";
    case MatmulPath::kFixedOrder: return "fixed-order";
  }
  return "?";
}

MatmulOptions MatmulOptions::from(const std::string& sixteen_bit_contractions, const std::string& cache_dir,
                                  bool batch_invariant) {
  MatmulOptions o;
  o.cache_dir = cache_dir;
  o.batch_invariant = batch_invariant;
  if (sixteen_bit_contractions == "native") o.choice = Choice::kNative;
  else if (sixteen_bit_contractions == "f32") o.choice = Choice::kF32;
  return o;
}

namespace {

dnnl::primitive_attr epilogue_attr(compiler::EpilogueActivation activation, bool* ok) {
  dnnl::primitive_attr attr;
  *ok = true;
  if (activation != compiler::EpilogueActivation::kNone) {
    std::optional<dnnl::algorithm> alg = onednn::eltwise_of(activation);
    if (!alg) {
      *ok = false;
      return attr;
    }
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, *alg, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

// One matmul primitive of (B, M, K) x (B, K, N) in `t` with the given strides; dst is
// contiguous. Throws dnnl::error when oneDNN has no implementation.
dnnl::matmul::primitive_desc matmul_pd(const dnnl::engine& engine, DType t, DType bias_t, const Geometry& g, int64_t M,
                                       int64_t N, bool bias, const dnnl::primitive_attr& attr, memory::desc* mds) {
  const memory::data_type dt = onednn::data_type(t);
  // Size-1 groups get the stride a contiguous layout would have (oneDNN checks them).
  const int64_t K = g.K;
  const int64_t lm = M == 1 ? K : g.lm, lk = K == 1 ? 1 : g.lk;
  const int64_t rk = K == 1 ? N : g.rk, rn = N == 1 ? 1 : g.rn;
  const int64_t lb = g.B == 1 ? M * K : g.lb, rb = g.B == 1 ? K * N : g.rb;
  mds[0] = memory::desc({g.B, M, K}, dt, memory::dims{lb, lm, lk});
  mds[1] = memory::desc({g.B, K, N}, dt, memory::dims{rb, rk, rn});
  mds[2] = memory::desc({g.B, M, N}, dt, memory::dims{M * N, N, 1});
  mds[3] = memory::desc({1, 1, N}, onednn::data_type(bias_t), memory::dims{N, N, 1});
  auto desc = bias ? dnnl::matmul::desc(mds[0], mds[1], mds[3], mds[2]) : dnnl::matmul::desc(mds[0], mds[1], mds[2]);
  return dnnl::matmul::primitive_desc(desc, attr, engine);
}

// Milliseconds of `k` on scratch operands (min_ms).
double time_ms(MatmulImpl& k, const ir::Instruction& dot, int64_t bias_elems) {
  const Shape& l = dot.operand(0)->shape();
  const Shape& r = dot.operand(1)->shape();
  // Small, normal values (denormals or zeros could time differently from real data).
  std::vector<uint16_t> a(static_cast<size_t>(l.num_elements()), k.dtype == DType::kBF16 ? 0x3e80 : 0x3400),
      b(static_cast<size_t>(r.num_elements()), k.dtype == DType::kBF16 ? 0x3e80 : 0x3400),
      bias(static_cast<size_t>(bias_elems), 0), out(static_cast<size_t>(k.g.B * k.g.M * k.g.N));
  return min_ms([&] { k.run(a.data(), b.data(), bias.data(), out.data()); });
}

}  // namespace

std::string native_matmul_isa(DType t) {
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const Geometry g{1, 64, 64, 64, 64 * 64, 64, 1, 64 * 64, 64, 1};
    memory::desc mds[4];
    const std::string impl = matmul_pd(engine, t, t, g, 64, 64, false, {}, mds).impl_info_str();
    return onednn::is_reference_impl(impl) ? "" : impl;
  } catch (const dnnl::error&) {
    return "";
  }
}

MatmulKernel::MatmulKernel(std::unique_ptr<MatmulImpl> impl) : impl_(std::move(impl)) {}
MatmulKernel::~MatmulKernel() = default;
MatmulPath MatmulKernel::path() const { return impl_->path; }
const std::string& MatmulKernel::isa() const { return impl_->isa; }

namespace {

// `dot` as a (batched) matrix product with one stride per group; nullopt for dtypes and layouts
// the adapter does not run (the caller falls back to a reference kernel).
std::optional<Geometry> geometry_of(const ir::Instruction& dot) {
  const Shape& l = dot.operand(0)->shape();
  const Shape& r = dot.operand(1)->shape();
  const ir::DotDims& dd = dot.attrs().dot;
  const DType dtype = l.dtype();
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16) return std::nullopt;
  Dims lstr = row_major_strides(l.dims()), rstr = row_major_strides(r.dims());
  Group lb, lm, lk, rb, rk, rn;
  if (!merge(l.dims(), lstr, dd.lhs_batch, &lb) || !merge(r.dims(), rstr, dd.rhs_batch, &rb) ||
      !merge(l.dims(), lstr, dd.lhs_contracting, &lk) || !merge(r.dims(), rstr, dd.rhs_contracting, &rk) ||
      !merge(l.dims(), lstr, free_dims(l.rank(), dd.lhs_batch, dd.lhs_contracting), &lm) ||
      !merge(r.dims(), rstr, free_dims(r.rank(), dd.rhs_batch, dd.rhs_contracting), &rn))
    return std::nullopt;
  if (dd.lhs_batch.size() > 1 && lb.size > 1) return std::nullopt;  // a rare layout; reference path
  return Geometry{lb.size, lm.size, lk.size, rn.size, lb.stride, lm.stride, lk.stride, rb.stride, rk.stride, rn.stride};
}

}  // namespace

bool MatmulKernel::can_run(const ir::Instruction& dot) { return geometry_of(dot).has_value(); }

std::unique_ptr<MatmulKernel> MatmulKernel::create(const ir::Instruction& dot, bool bias,
                                                   compiler::EpilogueActivation activation,
                                                   const MatmulOptions& options,
                                                   std::shared_ptr<WidenScratch> scratch, F32Sources f32_sources) {
  const Shape& l = dot.operand(0)->shape();
  const Shape& r = dot.operand(1)->shape();
  const DType dtype = l.dtype();
  const std::optional<Geometry> geometry = geometry_of(dot);
  if (!geometry) return nullptr;
  const Geometry& g = *geometry;
  const bool rounds = f32_sources.lhs || f32_sources.rhs || f32_sources.bias;
  KILN_CHECK(!rounds || dtype != DType::kF32, "f32 operands to round for an f32 matmul");
  bool attr_ok = false;
  const dnnl::primitive_attr attr = epilogue_attr(activation, &attr_ok);
  if (!attr_ok) return nullptr;
  const std::string where = dot.source().empty() ? "dot_general" : dot.source();
  const int64_t bias_elems = bias ? g.N : 0;

  // A whole-problem primitive in `t` (f32 operands, or the native 16-bit kernel).
  auto whole = [&](DType t) {
    auto impl = std::make_unique<MatmulImpl>();
    impl->dtype = dtype;
    impl->g = g;
    impl->has_bias = bias;
    memory::desc mds[4];
    dnnl::matmul::primitive_desc pd = matmul_pd(impl->engine, t, t, g, g.M, g.N, bias, attr, mds);
    impl->isa = pd.impl_info_str();
    impl->primitive = onednn::TeamPrimitive::of(pd);
    impl->src = memory(mds[0], impl->engine, DNNL_MEMORY_NONE);
    impl->weights = memory(mds[1], impl->engine, DNNL_MEMORY_NONE);
    impl->dst = memory(mds[2], impl->engine, DNNL_MEMORY_NONE);
    impl->args = {{DNNL_ARG_SRC, impl->src}, {DNNL_ARG_WEIGHTS, impl->weights}, {DNNL_ARG_DST, impl->dst}};
    if (bias) {
      impl->bias = memory(mds[3], impl->engine, DNNL_MEMORY_NONE);
      impl->args.insert({DNNL_ARG_BIAS, impl->bias});
    }
    return impl;
  };
  // f32 tiles over widened scratch: each tile is contiguous (rows, K) x (K, cols).
  auto widened = [&]() {
    auto impl = std::make_unique<MatmulImpl>();
    impl->dtype = dtype;
    impl->g = g;
    impl->has_bias = bias;
    impl->path = MatmulPath::kWidened;
    const auto [tr, tc] = tile_size(g.M, g.K, g.N);
    impl->tile_rows = tr;
    impl->tile_cols = tc;
    impl->lhs_tile = tile_layout(tr, g.K, g.lm, g.lk);
    impl->rhs_tile = tile_layout(g.K, tc, g.rk, g.rn);
    impl->scratch = scratch != nullptr ? scratch : std::make_shared<WidenScratch>();
    impl->scratch->reserve(impl->scratch_floats());
    impl->lhs_source = f32_sources.lhs ? DType::kF32 : dtype;
    impl->rhs_source = f32_sources.rhs ? DType::kF32 : dtype;
    impl->bias_source = f32_sources.bias ? DType::kF32 : dtype;
    for (int64_t rows : {tr, g.M % tr})
      for (int64_t cols : {tc, g.N % tc}) {
        if (rows == 0 || cols == 0 || impl->tiles.count({rows, cols}) > 0) continue;
        const auto [tile_lm, tile_lk] = tile_strides(impl->lhs_tile, rows, g.K);
        const auto [tile_rk, tile_rn] = tile_strides(impl->rhs_tile, g.K, cols);
        Geometry tg{1, rows, g.K, cols, rows * g.K, tile_lm, tile_lk, g.K * cols, tile_rk, tile_rn};
        memory::desc mds[4];
        dnnl::matmul::primitive_desc pd = matmul_pd(impl->engine, DType::kF32, DType::kF32, tg, rows, cols, bias, attr, mds);
        impl->isa = pd.impl_info_str();
        MatmulImpl::Tile& t = impl->tiles[{rows, cols}];
        t.primitive = onednn::TeamPrimitive::of(pd);
        t.src = memory(mds[0], impl->engine, DNNL_MEMORY_NONE);
        t.weights = memory(mds[1], impl->engine, DNNL_MEMORY_NONE);
        t.dst = memory(mds[2], impl->engine, DNNL_MEMORY_NONE);
        t.args = {{DNNL_ARG_SRC, t.src}, {DNNL_ARG_WEIGHTS, t.weights}, {DNNL_ARG_DST, t.dst}};
        if (bias) {
          t.bias = memory(mds[3], impl->engine, DNNL_MEMORY_NONE);
          t.args.insert({DNNL_ARG_BIAS, t.bias});
        }
      }
    return impl;
  };

  if (options.batch_invariant) {
    auto impl = std::make_unique<MatmulImpl>();
    impl->dtype = dtype;
    impl->g = g;
    impl->has_bias = bias;
    impl->activation = activation;
    impl->path = MatmulPath::kFixedOrder;
    impl->fixed_order = true;
    impl->isa = str_cat("kiln fixed-order gemm (", cpu_isa_name(cpu_isa()), ")");
    if (dtype != DType::kF32) {  // widened tiles; the GEMM reads the right one row-major
      std::tie(impl->tile_rows, impl->tile_cols) = tile_size(g.M, g.K, g.N);
      impl->lhs_tile = tile_layout(impl->tile_rows, g.K, g.lm, g.lk);
      impl->rhs_tile = g.rn == 1 ? TileLayout::kRowMajor : TileLayout::kGathered;
      impl->scratch = scratch != nullptr ? scratch : std::make_shared<WidenScratch>();
      impl->scratch->reserve(impl->scratch_floats());
      impl->lhs_source = f32_sources.lhs ? DType::kF32 : dtype;
      impl->rhs_source = f32_sources.rhs ? DType::kF32 : dtype;
      impl->bias_source = f32_sources.bias ? DType::kF32 : dtype;
    }
    return std::unique_ptr<MatmulKernel>(new MatmulKernel(std::move(impl)));
  }
  std::unique_ptr<MatmulImpl> impl;
  try {
    if (dtype == DType::kF32) {
      impl = whole(DType::kF32);
      return std::unique_ptr<MatmulKernel>(new MatmulKernel(std::move(impl)));
    }
    std::unique_ptr<MatmulImpl> native;
    if (options.choice != MatmulOptions::Choice::kF32 && !rounds) {  // f32 operands: widened only
      try {
        native = whole(dtype);
        native->path = MatmulPath::kNative;
        if (onednn::is_reference_impl(native->isa)) native.reset();
      } catch (const dnnl::error&) {  // no 16-bit kernel on this CPU: the widened path only
      }
    }
    if (native == nullptr || options.choice == MatmulOptions::Choice::kNative) {
      impl = native != nullptr ? std::move(native) : widened();
      report_16bit_path(dtype, "matmul", options.choice, impl->path == MatmulPath::kNative ? impl->isa : "", impl->isa);
    } else {
      // Both run here: the faster on this shape, timed once (ContractionDecisions keeps it).
      std::unique_ptr<MatmulImpl> wide = widened();
      const std::string key =
          str_cat(name(dtype), " B", g.B, " M", g.M, " K", g.K, " N", g.N, " strides ", g.lb, ",", g.lm, ",", g.lk,
                  " ", g.rb, ",", g.rk, ",", g.rn, bias ? " bias" : "", activation == compiler::EpilogueActivation::kNone ? "" : " ",
                  onednn::activation_name(activation));
      const MatmulPath choice = choose_16bit_path(
          where, "matmul", key, native->isa, wide->isa, options.cache_dir,
          [&] { return time_ms(*native, dot, bias_elems); }, [&] { return time_ms(*wide, dot, bias_elems); });
      report_16bit_path(dtype, "matmul", options.choice, native->isa, wide->isa);
      impl = choice == MatmulPath::kNative ? std::move(native) : std::move(wide);
    }
  } catch (const dnnl::error& e) {
    KILN_THROW(CompileError, "[", where, "] oneDNN cannot build a matmul for ", l, " x ", r, ": ", e.what());
  }
  return std::unique_ptr<MatmulKernel>(new MatmulKernel(std::move(impl)));
}

void MatmulKernel::run(const void* lhs, const void* rhs, const void* bias, void* out) const {
  impl_->run(lhs, rhs, bias, out);
}

}  // namespace kiln::cpu
