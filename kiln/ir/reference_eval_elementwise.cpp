// Reference evaluation of the elementwise ops: the table's rows (elementwise.def, their math
// over core/scalar_arith.h's ScalarArith), compare, select and convert. 16-bit floats are
// widened to f32, computed, and rounded once to the result.
#include <cmath>
#include <cstring>

#include "kiln/ir/elementwise.h"
#include "kiln/ir/reference_eval_impl.h"

namespace kiln::ir::ref {
namespace {

[[noreturn]] void no_form(Opcode op, DType t) {
  KILN_THROW(DTypeError, "[reference_eval/", opcode_name(op), "] has no ", t,
             " form: expected a dtype the op accepts, received ", t, ".");
}

template <typename T>
bool compare_value(Comparison c, T a, T b) {
  switch (c) {
    case Comparison::kEq: return a == b;
    case Comparison::kNe: return a != b;
    case Comparison::kLt: return a < b;
    case Comparison::kLe: return a <= b;
    case Comparison::kGt: return a > b;
    case Comparison::kGe: return a >= b;
  }
  return false;
}

// A row of the elementwise table (elementwise.def) over the operands' compute type.
HostTensor map_row(const Instruction& inst, std::span<const HostTensor> args) {
  std::vector<HostTensor> wide;
  for (const HostTensor& a : args) wide.push_back(widen(a));
  HostTensor out(wide[0].shape());
  const bool is_row = elementwise::visit_row(inst.opcode(), [&](auto row) {
    using Row = decltype(row);
    visit_compute_dtype(wide[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!elementwise::accepts_type<T>(Row::kInfo.dtypes)) {
        no_form(inst.opcode(), dtype_of<T>);
      } else {
        arith::ScalarArith<T> m;
        auto dst = out.data<T>();
        auto a = wide[0].data<T>();
        if constexpr (Row::kInfo.arity == 1) {
          for (size_t i = 0; i < a.size(); ++i) dst[i] = Row::apply(m, a[i]);
        } else {
          auto b = wide[1].data<T>();
          for (size_t i = 0; i < a.size(); ++i) dst[i] = Row::apply(m, a[i], b[i]);
        }
      }
    });
  });
  KILN_CHECK(is_row, opcode_name(inst.opcode()), " is not a row of the elementwise table");
  return out.astype(inst.dtype());
}

HostTensor compare(const Instruction& inst, const HostTensor& a, const HostTensor& b) {
  HostTensor wa = widen(a), wb = widen(b);
  HostTensor out(wa.shape().with_dtype(DType::kBool));
  visit_compute_dtype(wa.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto lhs = wa.data<T>();
    auto rhs = wb.data<T>();
    auto dst = out.data<bool>();
    for (size_t i = 0; i < lhs.size(); ++i) dst[i] = compare_value(inst.attrs().comparison, lhs[i], rhs[i]);
  });
  return out;
}

HostTensor select(const HostTensor& predicate, const HostTensor& on_true, const HostTensor& on_false) {
  HostTensor out(on_true.shape());
  const size_t width = size_of(out.dtype());
  auto pred = predicate.data<bool>();
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (size_t i = 0; i < pred.size(); ++i) {
    const auto* src = static_cast<const std::byte*>(pred[i] ? on_true.raw_data() : on_false.raw_data());
    std::memcpy(dst + i * width, src + i * width, width);
  }
  return out;
}

// Float -> integer truncates toward zero, saturates at the type's range, and maps NaN to 0
// (XLA's CPU semantics; C++ leaves these cases undefined). Anything -> bool is `!= 0`.
template <typename D, typename S>
D convert_value(S s) {
  constexpr bool kSrcFloat = !std::is_integral_v<S>;  // float, double, BF16, F16
  if constexpr (std::is_same_v<D, bool>) {
    return to_double(s) != 0.0;
  } else if constexpr (std::is_integral_v<D> && kSrcFloat) {
    const double v = to_double(s);
    if (v != v) return D(0);
    if (v <= static_cast<double>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(std::trunc(v));
  } else if constexpr (std::is_integral_v<D>) {
    return static_cast<D>(s);  // integer -> integer wraps modulo 2^bits
  } else if constexpr (std::is_integral_v<S> && (std::is_same_v<D, float> || std::is_same_v<D, double>)) {
    return static_cast<D>(s);  // one correctly rounded step, exact for large i64
  } else if constexpr (std::is_integral_v<S>) {
    return D(static_cast<float>(s));
  } else {
    return from_double<D>(to_double(s));
  }
}

}  // namespace

HostTensor eval_elementwise(const Instruction& inst, std::span<const HostTensor> args) {
  if (inst.opcode() == Opcode::kCompare) return compare(inst, args[0], args[1]);
  if (inst.opcode() == Opcode::kSelect) return select(args[0], args[1], args[2]);
  return map_row(inst, args);
}

HostTensor eval_convert(const Instruction& inst, const HostTensor& x) {
  HostTensor out(inst.shape());
  visit_dtype(x.dtype(), [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    visit_dtype(out.dtype(), [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const S* src = static_cast<const S*>(x.raw_data());
      D* dst = static_cast<D*>(out.raw_data());
      for (int64_t i = 0; i < x.num_elements(); ++i) dst[i] = convert_value<D>(src[i]);
    });
  });
  return out;
}

}  // namespace kiln::ir::ref
