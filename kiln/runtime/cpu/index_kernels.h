// Index kernels: gather (embedding lookup, jnp.take along an axis), scatter_add (its gradient)
// and rng_bits (counter-based Philox bits, bit-identical to the reference evaluator). All are
// team work (team_impl.h) and deterministic whatever the thread count.
#pragma once

#include "kiln/core/shape.h"

namespace kiln::cpu {

/// Layout of a gather or scatter_add along `axis`: operand (outer, axis_size, inner) and
/// indices flattened to `count`.
struct IndexGeometry {
  int64_t outer = 1, axis_size = 1, inner = 1, count = 1;
  DType index_dtype = DType::kI32;
  size_t element_size = 4;

  static IndexGeometry of(const Shape& operand, const Shape& indices, int64_t axis);
};

/// out(outer, count, inner) = operand(outer, clamp(indices[k]), inner).
void gather_team(const IndexGeometry& g, const void* operand, const void* indices, void* out);
/// out = operand; out(outer, clamp(indices[k]), inner) += updates(outer, k, inner), in order of k.
/// f32 and f64 only (`dtype`); returns false for other dtypes (callers use another kernel).
bool scatter_add_supported(DType dtype);
void scatter_add_team(const IndexGeometry& g, DType dtype, const void* operand, const void* indices,
                      const void* updates, void* out);
/// dynamic_slice / dynamic_update_slice: the box of `box` dims at the clamped starts of `x`.
struct BoxGeometry {
  Dims x_dims, box;
  size_t element_size = 4;
  std::vector<DType> index_dtypes;  // each start's (i32 or i64: XLA lets them differ)

  /// Starts read from the scalar index operands, clamped so the box fits (XLA).
  Dims clamped_starts(const void* const* starts) const;
};
/// out = the box of x at `starts`.
void dynamic_slice(const BoxGeometry& g, const Dims& starts, const void* x, void* out);
/// out = x with `update` (the box's dims) written at `starts`; x may be out.
void dynamic_update_slice(const BoxGeometry& g, const Dims& starts, const void* x, const void* update, void* out);

/// out[i] = philox_element_bits(key, i) as i32.
void rng_bits_team(int64_t key, int64_t count, void* out);

}  // namespace kiln::cpu
