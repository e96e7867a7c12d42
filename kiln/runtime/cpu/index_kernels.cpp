// Gather, scatter_add and rng_bits. Shapes legend: operand (O, A, I), indices (K), gathered /
// updates (O, K, I), with O the dims before the axis, A the axis, I the dims after it.
#include "kiln/runtime/cpu/index_kernels.h"

#include <algorithm>
#include <cstring>

#include "kiln/core/rng.h"
#include "kiln/runtime/cpu/cpu_isa_impl.h"

namespace kiln::cpu {
namespace {

// rng_bits' loop per ISA variant (cpu_isa_impl.h): Philox's 32x32->64-bit multiplies
// vectorize twice as wide with AVX-512.
#define KILN_ISA_BODY "kiln/runtime/cpu/index_kernels_exec.inc"
#include "kiln/runtime/cpu/cpu_isa_variants.inc"

using RngBitsRange = void (*)(int64_t key, int64_t begin, int64_t end, int32_t* out);

int64_t index_at(const void* indices, DType t, int64_t k, int64_t axis_size) {
  int64_t i = t == DType::kI64 ? static_cast<const int64_t*>(indices)[k] : static_cast<const int32_t*>(indices)[k];
  return std::clamp<int64_t>(i, 0, axis_size - 1);  // out-of-range indices clamp, as in XLA
}

template <typename T>
void scatter_add_typed(const IndexGeometry& g, const T* operand, const void* indices, const T* updates, T* out) {
  const int64_t total = g.outer * g.axis_size * g.inner;
#pragma omp for schedule(static)
  for (int64_t i = 0; i < total; ++i) out[i] = operand[i];
  // Each thread owns a block of (outer, inner) columns and adds every k in order: deterministic.
  constexpr int64_t kBlock = 256;
  const int64_t blocks_per_row = (g.inner + kBlock - 1) / kBlock;
#pragma omp for schedule(static)
  for (int64_t b = 0; b < g.outer * blocks_per_row; ++b) {
    const int64_t o = b / blocks_per_row, j0 = (b % blocks_per_row) * kBlock;
    const int64_t j1 = std::min(g.inner, j0 + kBlock);
    for (int64_t k = 0; k < g.count; ++k) {
      const int64_t at = index_at(indices, g.index_dtype, k, g.axis_size);
      T* dst = out + (o * g.axis_size + at) * g.inner;
      const T* src = updates + (o * g.count + k) * g.inner;
      for (int64_t j = j0; j < j1; ++j) dst[j] += src[j];
    }
  }
}

}  // namespace

IndexGeometry IndexGeometry::of(const Shape& operand, const Shape& indices, int64_t axis) {
  IndexGeometry g;
  for (int d = 0; d < operand.rank(); ++d) {
    if (d < axis) g.outer *= operand.dims()[static_cast<size_t>(d)];
    if (d > axis) g.inner *= operand.dims()[static_cast<size_t>(d)];
  }
  g.axis_size = operand.dims()[static_cast<size_t>(axis)];
  g.count = indices.num_elements();
  g.index_dtype = indices.dtype();
  g.element_size = size_of(operand.dtype());
  return g;
}

void gather_team(const IndexGeometry& g, const void* operand, const void* indices, void* out) {
  const size_t row = static_cast<size_t>(g.inner) * g.element_size;
  const auto* src = static_cast<const std::byte*>(operand);
  auto* dst = static_cast<std::byte*>(out);
#pragma omp for schedule(static)
  for (int64_t r = 0; r < g.outer * g.count; ++r) {
    const int64_t o = r / g.count, k = r % g.count;
    if (g.axis_size == 0) {
      std::memset(dst + r * static_cast<int64_t>(row), 0, row);  // nothing to pick: zeros
      continue;
    }
    const int64_t at = index_at(indices, g.index_dtype, k, g.axis_size);
    std::memcpy(dst + r * static_cast<int64_t>(row), src + (o * g.axis_size + at) * static_cast<int64_t>(row), row);
  }
}

bool scatter_add_supported(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF64; }

void scatter_add_team(const IndexGeometry& g, DType dtype, const void* operand, const void* indices,
                      const void* updates, void* out) {
  if (dtype == DType::kF64)
    scatter_add_typed<double>(g, static_cast<const double*>(operand), indices, static_cast<const double*>(updates),
                              static_cast<double*>(out));
  else
    scatter_add_typed<float>(g, static_cast<const float*>(operand), indices, static_cast<const float*>(updates),
                             static_cast<float*>(out));
}

Dims BoxGeometry::clamped_starts(const void* const* starts) const {
  Dims out(x_dims.size());
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t s = index_dtypes[d] == DType::kI64 ? *static_cast<const int64_t*>(starts[d])
                                                     : *static_cast<const int32_t*>(starts[d]);
    out[d] = std::clamp<int64_t>(s, 0, x_dims[d] - box[d]);
  }
  return out;
}

namespace {

// Calls fn(byte offset in x, byte offset in the box, run bytes) for each run of the box along
// its last dim, in row-major order.
template <typename Fn>
void for_each_box_run(const BoxGeometry& g, const Dims& starts, Fn&& fn) {
  const size_t r = g.x_dims.size();
  const int64_t elem = static_cast<int64_t>(g.element_size);
  if (r == 0) return fn(int64_t{0}, int64_t{0}, elem);
  for (int64_t d : g.box)
    if (d == 0) return;
  Dims x_strides(r, elem);
  for (size_t d = r - 1; d-- > 0;) x_strides[d] = x_strides[d + 1] * g.x_dims[d + 1];
  const int64_t run = g.box[r - 1] * elem;
  Dims at(r, 0);  // odometer over the box, last dim fixed at 0
  for (int64_t box_off = 0;; box_off += run) {
    int64_t x_off = 0;
    for (size_t d = 0; d < r; ++d) x_off += (starts[d] + at[d]) * x_strides[d];
    fn(x_off, box_off, run);
    size_t d = r - 1;
    while (d-- > 0 && ++at[d] == g.box[d]) at[d] = 0;
    if (d == static_cast<size_t>(-1)) return;
  }
}

}  // namespace

void dynamic_slice(const BoxGeometry& g, const Dims& starts, const void* x, void* out) {
  for_each_box_run(g, starts, [&](int64_t x_off, int64_t box_off, int64_t run) {
    std::memcpy(static_cast<std::byte*>(out) + box_off, static_cast<const std::byte*>(x) + x_off, static_cast<size_t>(run));
  });
}

void dynamic_update_slice(const BoxGeometry& g, const Dims& starts, const void* x, const void* update, void* out) {
  if (x != out) {
    int64_t bytes = static_cast<int64_t>(g.element_size);
    for (int64_t d : g.x_dims) bytes *= d;
    std::memcpy(out, x, static_cast<size_t>(bytes));
  }
  for_each_box_run(g, starts, [&](int64_t x_off, int64_t box_off, int64_t run) {
    std::memcpy(static_cast<std::byte*>(out) + x_off, static_cast<const std::byte*>(update) + box_off, static_cast<size_t>(run));
  });
}

void rng_bits_team(int64_t key, int64_t count, void* out) {
  static const RngBitsRange range = KILN_ISA_SELECT(rng_bits_range);
  auto* o = static_cast<int32_t*>(out);
  constexpr int64_t kBlock = 4096;  // the variant is called per block; the loop is inside it
  const int64_t blocks = (count + kBlock - 1) / kBlock;
#pragma omp for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) range(key, b * kBlock, std::min(count, (b + 1) * kBlock), o);
}

}  // namespace kiln::cpu
