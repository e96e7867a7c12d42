// Internal to the reference evaluator (reference_eval*.cpp): index iteration, dtype dispatch
// over the compute types, exact integer arithmetic, and one entry point per op family.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/core/dtype_dispatch.h"
#include "kiln/core/host_tensor.h"
#include "kiln/core/scalar_arith.h"
#include "kiln/ir/instruction.h"

namespace kiln::ir::ref {

/// Row-major strides of `dims` (in elements).
Dims strides_of(const Dims& dims);

/// Linear row-major offset of multi-index `index` given `strides`.
inline int64_t offset_of(const Dims& index, const Dims& strides) {
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) offset += index[i] * strides[i];
  return offset;
}

/// Calls fn(index, linear) for every multi-index of `dims` in row-major order (once for a
/// scalar, never when a dim is 0).
template <typename Fn>
void for_each_index(const Dims& dims, Fn&& fn) {
  const int64_t n = checked_num_elements(dims);
  Dims index(dims.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    fn(static_cast<const Dims&>(index), linear);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

/// bf16/f16 -> f32 (exact); other dtypes unchanged. Ops compute on widened values.
HostTensor widen(const HostTensor& t);
/// The dtype values of `t` compute in: f32 for 16-bit floats, else t itself.
DType compute_dtype(DType t);

/// visit_dtype restricted to the compute types (f32, f64, i32, i64, u8, bool); a 16-bit float
/// here is a bug (it should have been widened).
template <typename Fn>
decltype(auto) visit_compute_dtype(DType t, Fn&& fn) {
  KILN_CHECK(t != DType::kBF16 && t != DType::kF16, "16-bit float reached a compute kernel");
  switch (t) {
    case DType::kF64: return fn(TypeTag<double>{});
    case DType::kI32: return fn(TypeTag<int32_t>{});
    case DType::kI64: return fn(TypeTag<int64_t>{});
    case DType::kU8: return fn(TypeTag<uint8_t>{});
    case DType::kBool: return fn(TypeTag<bool>{});
    case DType::kF32: case DType::kBF16: case DType::kF16: break;
    case DType::kString: KILN_CHECK(false, "a string value in the IR (Computation::add refuses it)");
  }
  return fn(TypeTag<float>{});
}

/// Calls fn(TypeTag<C>{}, TypeTag<Acc>{}) for a tensor of `dtype`: C is its compute type and
/// Acc the accumulator of sums: f64 for f32/f64, f32 for 16-bit floats, the type itself for
/// integers (wrapping), and i64 for bool (so a sum is an or and a product an and once the
/// result converts back with != 0).
template <typename Fn>
decltype(auto) visit_accumulation(DType dtype, Fn&& fn) {
  if (dtype == DType::kBF16 || dtype == DType::kF16)
    return fn(TypeTag<float>{}, TypeTag<float>{});
  return visit_compute_dtype(dtype, [&](auto tag) -> decltype(auto) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, float>, double,
                                   std::conditional_t<std::is_same_v<T, bool>, int64_t, T>>;
    return fn(tag, TypeTag<Acc>{});
  });
}

// The integer semantics shared with the elementwise table's arithmetic (core/scalar_arith.h).
using arith::kIsFloat;
using arith::wrapping_add;
using arith::wrapping_mul;
using arith::wrapping_sub;

template <typename T>
bool is_nan(T v) {
  if constexpr (kIsFloat<T>) return v != v;
  else return false;
}

/// max with NaN propagation (a NaN operand gives NaN); bool max is or.
template <typename T>
T nan_max(T a, T b) {
  if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
  return a < b ? b : a;
}

/// min with NaN propagation; bool min is and.
template <typename T>
T nan_min(T a, T b) {
  if (is_nan(a) || is_nan(b)) return is_nan(a) ? a : b;
  return b < a ? b : a;
}

/// The identity of max: -inf for floats, the lowest value for integers, false for bool.
template <typename T>
T max_identity() {
  if constexpr (kIsFloat<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}

/// The identity of min: +inf for floats, the largest value for integers, true for bool.
template <typename T>
T min_identity() {
  if constexpr (kIsFloat<T>) return std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::max();
}

/// True when `candidate` should replace `best` in a first-maximum search: it is larger, or it
/// is the first NaN (NaN counts as the maximum, as in NumPy's argmax).
template <typename T>
bool beats(T candidate, T best) {
  if (is_nan(best) || is_nan(candidate)) return !is_nan(best);
  return best < candidate;
}

/// Converts a compute-type vector to a tensor of `shape` (rounding 16-bit floats once).
template <typename C>
HostTensor tensor_from(const std::vector<C>& values, const Shape& shape) {
  HostTensor wide(shape.with_dtype(dtype_of<C>));
  auto dst = wide.data<C>();
  for (size_t i = 0; i < values.size(); ++i) dst[i] = values[i];
  return wide.astype(shape.dtype());
}

/// Reduces groups of elements of `x` into a tensor of `result` by `kind`: for_each_pair(fn)
/// calls fn(result_at, x_at) for every member of every group. Sums accumulate in the
/// accumulator type; mean divides by the group's size; an empty group gives the identity of
/// max/min and 0 for sum and mean.
template <typename ForEachPair>
HostTensor reduce_groups(const HostTensor& x, const Shape& result, ReduceKind kind,
                         ForEachPair&& for_each_pair) {
  const HostTensor wx = widen(x);
  return visit_accumulation(x.dtype(), [&](auto c_tag, auto acc_tag) {
    using C = typename decltype(c_tag)::type;
    using Acc = typename decltype(acc_tag)::type;
    auto src = wx.data<C>();
    const size_t n = static_cast<size_t>(result.num_elements());
    if (kind == ReduceKind::kMax || kind == ReduceKind::kMin) {
      const bool is_max = kind == ReduceKind::kMax;
      std::vector<C> out(n, is_max ? max_identity<C>() : min_identity<C>());
      for_each_pair([&](int64_t r, int64_t at) {
        const C v = src[static_cast<size_t>(at)];
        out[static_cast<size_t>(r)] = is_max ? nan_max<C>(out[static_cast<size_t>(r)], v)
                                             : nan_min<C>(out[static_cast<size_t>(r)], v);
      });
      return tensor_from(out, result);
    }
    std::vector<Acc> sum(n, Acc(0));
    std::vector<int64_t> count(n, 0);
    for_each_pair([&](int64_t r, int64_t at) {
      sum[static_cast<size_t>(r)] =
          wrapping_add(sum[static_cast<size_t>(r)], static_cast<Acc>(src[static_cast<size_t>(at)]));
      ++count[static_cast<size_t>(r)];
    });
    std::vector<C> out(n, C(0));
    for (size_t i = 0; i < n; ++i)
      if (kind == ReduceKind::kSum) out[i] = static_cast<C>(sum[i]);
      else if (count[i] > 0) out[i] = static_cast<C>(sum[i] / static_cast<Acc>(count[i]));
    return tensor_from(out, result);
  });
}

// One entry point per op family; `args` holds one value per operand.
HostTensor eval_elementwise(const Instruction& inst, std::span<const HostTensor> args);
HostTensor eval_convert(const Instruction& inst, const HostTensor& x);
HostTensor eval_shape_op(const Instruction& inst, std::span<const HostTensor> args);
HostTensor eval_iota(const Instruction& inst);
HostTensor eval_gather(const Instruction& inst, const HostTensor& operand, const HostTensor& indices);
HostTensor eval_scatter_add(const Instruction& inst, std::span<const HostTensor> args);
HostTensor eval_dynamic_slice(const Instruction& inst, std::span<const HostTensor> args);
HostTensor eval_reduce(const Instruction& inst, const HostTensor& x);
HostTensor eval_argmax(const Instruction& inst, const HostTensor& x);
HostTensor eval_dot_general(const Instruction& inst, const HostTensor& lhs, const HostTensor& rhs);
HostTensor eval_convolution(const Instruction& inst, const HostTensor& a, const HostTensor& b);
HostTensor eval_reduce_window(const Instruction& inst, const HostTensor& x);
HostTensor eval_reduce_window_grad(const Instruction& inst, const HostTensor& x, const HostTensor& dy);
/// Replica `replica`'s result of a collective, given every replica's operand in replica order.
HostTensor eval_collective(const Instruction& inst, std::span<const HostTensor> replicas, int64_t replica);
/// evaluate()'s and evaluate_replicas' walk over the replicas' bound parameters (reference_eval.cpp).
std::vector<std::vector<HostTensor>> walk_replicas(const Computation& computation,
                                                   std::vector<std::unordered_map<const Instruction*, HostTensor>> values);

}  // namespace kiln::ir::ref
