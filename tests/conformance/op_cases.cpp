// The op conformance table: one row per op variant (an op with attribute choices, such as
// compare's directions, gets one row each). Shapes are drawn from fixed seeds and include
// size-1 dims (broadcasts stretch them), empty dims and scalars wherever the op allows them.
#include "tests/conformance/op_cases.h"

#include <cmath>
#include <limits>
#include <random>
#include <tuple>

#include "kiln/trace/emit.h"

namespace kiln::conformance {
namespace {

using ir::Opcode;

const std::vector<DType> kFloats = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16};
const std::vector<DType> kNumeric = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16,
                                     DType::kI32, DType::kI64, DType::kU8};
const std::vector<DType> kAll = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16,
                                 DType::kI32, DType::kI64, DType::kU8, DType::kBool};

// Elementwise shapes: a small random matrix (the gradient's), a row long enough for vector
// paths and their tails, size-1 dims, an empty dim and a scalar.
std::vector<Dims> elementwise_dims(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  return {{pick(1, 3), pick(2, 4)}, {3, pick(17, 40)}, {1, 1, pick(2, 5)}, {0, pick(1, 3)}, {}};
}

OpCase elementwise(std::mt19937& rng, std::string name, Opcode op, std::vector<DType> dtypes, int arity,
                   Operand shape = {}) {
  OpCase c{.name = std::move(name), .op = op, .dtypes = std::move(dtypes)};
  for (const Dims& d : elementwise_dims(rng)) {
    Variant v;
    for (int i = 0; i < arity; ++i) {
      Operand o = shape;
      o.dims = d;
      v.operands.push_back(o);
    }
    c.variants.push_back(v);
  }
  return c;
}

Variant unary(Dims dims, ir::Attrs attrs, std::optional<Dims> declared = std::nullopt) {
  return {.operands = {{.dims = std::move(dims)}}, .attrs = std::move(attrs), .declared = std::move(declared)};
}

Variant two(Dims a, Dims b, ir::Attrs attrs, std::optional<Dims> declared = std::nullopt) {
  return {.operands = {{.dims = std::move(a)}, {.dims = std::move(b)}}, .attrs = std::move(attrs),
          .declared = std::move(declared)};
}

// i32 indices in [0, bound): in range (out-of-range indices clamp, a contract of their own).
Operand indices(Dims dims, int64_t bound) { return {.dims = std::move(dims), .role = Role::kIndex, .int_hi = bound}; }

ir::Attrs dims_attr(Dims dims) {
  ir::Attrs a;
  a.dims = std::move(dims);
  return a;
}

ir::Attrs slice_attr(Dims starts, Dims limits, Dims strides, double scalar = 0.0) {
  ir::Attrs a;
  a.starts = std::move(starts);
  a.limits = std::move(limits);
  a.strides = std::move(strides);
  a.scalar = scalar;
  return a;
}

ir::Attrs dot_attr(ir::DotDims d) {
  ir::Attrs a;
  a.dot = std::move(d);
  return a;
}

ir::Attrs conv_attr(ir::ConvDims d) {
  ir::Attrs a;
  a.conv = std::move(d);
  return a;
}

ir::Attrs window_attr(ir::ReduceKind kind, ir::Window w) {
  ir::Attrs a;
  a.reduce_kind = kind;
  a.window = std::move(w);
  return a;
}

std::vector<OpCase> make_cases() {
  std::mt19937 rng(19);
  std::vector<OpCase> cases;
  auto add = [&](OpCase c) { cases.push_back(std::move(c)); };

  // Leaves.
  {
    OpCase c = elementwise(rng, "parameter", Opcode::kParameter, kAll, 1);
    c.build = [](ir::Builder&, const std::vector<ir::Instruction*>& ps, const Variant&, DType) { return ps[0]; };
    add(c);
  }
  {
    OpCase c{.name = "constant", .op = Opcode::kConstant, .dtypes = kAll};
    for (Dims d : elementwise_dims(rng)) c.variants.push_back({.declared = d});
    c.build = [](ir::Builder& b, const std::vector<ir::Instruction*>&, const Variant& v, DType t) {
      return b.constant(testing::random_f64(*v.declared, 7, -4.0, 4.0).astype(t));
    };
    add(c);
  }
  add({.name = "iota", .op = Opcode::kIota, .dtypes = kAll,
       .variants = {{.attrs = dims_attr({1}), .declared = Dims{2, 5}}, {.attrs = dims_attr({0}), .declared = Dims{7}},
                    {.attrs = dims_attr({0}), .declared = Dims{0, 3}}}});

  // Unary elementwise. Domains keep log, sqrt and rsqrt finite.
  add(elementwise(rng, "neg", Opcode::kNeg, kNumeric, 1));
  add(elementwise(rng, "abs", Opcode::kAbs, kNumeric, 1));
  add(elementwise(rng, "sign", Opcode::kSign, kNumeric, 1));
  add(elementwise(rng, "exp", Opcode::kExp, kFloats, 1, {.lo = -3, .hi = 3}));
  add(elementwise(rng, "log", Opcode::kLog, kFloats, 1, {.lo = 0.1, .hi = 4}));
  add(elementwise(rng, "log1p", Opcode::kLog1p, kFloats, 1, {.lo = -0.5, .hi = 3}));
  add(elementwise(rng, "tanh", Opcode::kTanh, kFloats, 1, {.lo = -3, .hi = 3}));
  add(elementwise(rng, "logistic", Opcode::kLogistic, kFloats, 1, {.lo = -4, .hi = 4}));
  add(elementwise(rng, "sqrt", Opcode::kSqrt, kFloats, 1, {.lo = 0.1, .hi = 4}));
  add(elementwise(rng, "rsqrt", Opcode::kRsqrt, kFloats, 1, {.lo = 0.1, .hi = 4}));
  add(elementwise(rng, "erf", Opcode::kErf, kFloats, 1, {.lo = -2, .hi = 2}));
  add(elementwise(rng, "expm1", Opcode::kExpm1, kFloats, 1, {.lo = -2, .hi = 2}));
  add(elementwise(rng, "sin", Opcode::kSin, kFloats, 1, {.lo = -4, .hi = 4}));
  add(elementwise(rng, "cos", Opcode::kCos, kFloats, 1, {.lo = -4, .hi = 4}));
  add(elementwise(rng, "floor", Opcode::kFloor, kFloats, 1, {.lo = -3, .hi = 3}));
  add(elementwise(rng, "ceil", Opcode::kCeil, kFloats, 1, {.lo = -3, .hi = 3}));
  add(elementwise(rng, "round", Opcode::kRound, kFloats, 1, {.lo = -3, .hi = 3}));
  {
    // Integers halved: every other value a tie, which goes to the even neighbour.
    OpCase c = elementwise(rng, "round(halves)", Opcode::kRound, kFloats, 1, {.int_lo = -8, .int_hi = 8});
    c.integer_valued = true;
    c.values_only = true;
    c.build = [](ir::Builder& b, const std::vector<ir::Instruction*>& ps, const Variant&, DType) {
      return b.unary(Opcode::kRound, b.binary(Opcode::kMul, ps[0], b.full(ps[0]->shape(), 0.5)));
    };
    add(c);
  }
  {
    OpCase c = elementwise(rng, "convert(to f32)", Opcode::kConvert, kAll, 1, {.lo = -4, .hi = 4});
    c.declared_dtype = DType::kF32;
    for (Variant& v : c.variants) v.declared = v.operands[0].dims;
    add(c);
  }
  {
    // Non-negative sources: a negative float has no u8 value.
    OpCase c = elementwise(rng, "convert(from f32)", Opcode::kConvert, kAll, 1,
                           {.role = Role::kF32, .lo = 0, .hi = 4});
    for (Variant& v : c.variants) v.declared = v.operands[0].dims;
    add(c);
  }

  // Binary elementwise.
  add(elementwise(rng, "add", Opcode::kAdd, kNumeric, 2));
  add(elementwise(rng, "sub", Opcode::kSub, kNumeric, 2));
  add(elementwise(rng, "mul", Opcode::kMul, kNumeric, 2));
  {
    OpCase c = elementwise(rng, "div", Opcode::kDiv, kNumeric, 2);
    for (Variant& v : c.variants)  // divisors away from 0 (integer ones have a row of their own)
      v.operands[1] = {.dims = v.operands[1].dims, .lo = 0.5, .hi = 2, .int_lo = 1, .int_hi = 8};
    add(c);
  }
  {
    // Integer x / 0 is -1 (all bits set), as XLA defines it: no input is undefined behaviour.
    OpCase c = elementwise(rng, "div(integer by 0 or -1)", Opcode::kDiv, {DType::kI32, DType::kI64, DType::kU8}, 2);
    for (Variant& v : c.variants) v.operands[1] = {.dims = v.operands[1].dims, .int_lo = -1, .int_hi = 1};
    c.values_only = true;
    add(c);
  }
  {
    OpCase c = elementwise(rng, "pow", Opcode::kPow, kFloats, 2, {.lo = 0.5, .hi = 2});
    c.tol_scale = 4;  // pow's f32 error grows with the exponent
    add(c);
  }
  for (auto [op, text] : {std::pair{Opcode::kAdd, "add"}, {Opcode::kMul, "mul"}, {Opcode::kMax, "max"}}) {
    // Integers beyond f32's 24-bit mantissa (and f64's 53 bits for i64) must stay exact.
    OpCase c = elementwise(rng, str_cat(text, "(large integers)"), op, {DType::kI32, DType::kI64}, 2,
                           {.int_lo = (int64_t{1} << 30) - 64, .int_hi = (int64_t{1} << 30) + 64});
    c.values_only = true;
    add(c);
  }
  for (auto [op, text, arity] : {std::tuple{Opcode::kAdd, "add", 2}, {Opcode::kSub, "sub", 2},
                                 {Opcode::kMul, "mul", 2}, {Opcode::kNeg, "neg", 1}, {Opcode::kAbs, "abs", 1}}) {
    // i32 arithmetic wraps modulo 2^32 (-(-2^31) is -2^31), as the IR defines it.
    OpCase c = elementwise(rng, str_cat(text, "(i32 wrap-around)"), op, {DType::kI32}, arity,
                           {.int_lo = std::numeric_limits<int32_t>::min(),
                            .int_hi = int64_t{std::numeric_limits<int32_t>::max()} + 1});
    c.values_only = true;
    add(c);
  }
  add(elementwise(rng, "atan2", Opcode::kAtan2, kFloats, 2, {.lo = -2, .hi = 2}));
  {
    // Positive divisors here, negative ones (the result takes their sign) in the next row.
    OpCase c = elementwise(rng, "mod", Opcode::kMod, kNumeric, 2, {.lo = -4, .hi = 4, .int_lo = -20, .int_hi = 20});
    for (Variant& v : c.variants) v.operands[1] = {.dims = v.operands[1].dims, .lo = 0.5, .hi = 2, .int_lo = 1, .int_hi = 8};
    add(c);
  }
  {
    OpCase c = elementwise(rng, "mod(negative divisor)", Opcode::kMod, {DType::kF32, DType::kF64, DType::kBF16,
                                                                         DType::kF16, DType::kI32, DType::kI64}, 2,
                           {.lo = -4, .hi = 4, .int_lo = -20, .int_hi = 20});
    for (Variant& v : c.variants) v.operands[1] = {.dims = v.operands[1].dims, .lo = -2, .hi = -0.5, .int_lo = -8, .int_hi = 0};
    c.values_only = true;
    add(c);
  }
  {
    // Integer x mod 0 is x (and never undefined behaviour), as XLA's remainder.
    OpCase c = elementwise(rng, "mod(integer by 0 or -1)", Opcode::kMod, {DType::kI32, DType::kI64, DType::kU8}, 2);
    for (Variant& v : c.variants) v.operands[1] = {.dims = v.operands[1].dims, .int_lo = -1, .int_hi = 1};
    c.values_only = true;
    add(c);
  }
  add(elementwise(rng, "max", Opcode::kMax, kAll, 2));
  add(elementwise(rng, "min", Opcode::kMin, kAll, 2));
  for (auto [direction, text] : {std::pair{ir::Comparison::kEq, "eq"}, {ir::Comparison::kNe, "ne"},
                                 {ir::Comparison::kLt, "lt"}, {ir::Comparison::kLe, "le"},
                                 {ir::Comparison::kGt, "gt"}, {ir::Comparison::kGe, "ge"}}) {
    OpCase c = elementwise(rng, str_cat("compare(", text, ")"), Opcode::kCompare, kAll, 2,
                           {.lo = -3, .hi = 3, .int_lo = -2, .int_hi = 2});
    c.integer_valued = true;  // ties, so eq, le and ge see both answers
    for (Variant& v : c.variants) v.attrs.comparison = direction;
    add(c);
  }
  {
    OpCase c = elementwise(rng, "select", Opcode::kSelect, kAll, 3);
    for (Variant& v : c.variants) v.operands[0].role = Role::kPredicate;
    add(c);
  }

  // Shape ops.
  add({.name = "broadcast_in_dim", .op = Opcode::kBroadcastInDim, .dtypes = kAll,
       .variants = {unary({3}, dims_attr({1}), Dims{2, 3}),           // a new leading dim
                    unary({3, 1}, dims_attr({0, 1}), Dims{3, 4}),      // a size-1 dim stretched
                    unary({2, 1, 3}, dims_attr({0, 1, 2}), Dims{2, 33, 3, 2}),
                    unary({}, dims_attr({}), Dims{2, 2}),              // a scalar
                    unary({1, 3}, dims_attr({0, 1}), Dims{0, 3})}});   // stretched to empty
  add({.name = "reshape", .op = Opcode::kReshape, .dtypes = kAll,
       .variants = {unary({2, 3}, {}, Dims{3, 2}), unary({6}, {}, Dims{1, 2, 3}), unary({0, 3}, {}, Dims{3, 0}),
                    unary({}, {}, Dims{1})}});
  add({.name = "transpose", .op = Opcode::kTranspose, .dtypes = kAll,
       .variants = {unary({2, 3, 4}, dims_attr({2, 0, 1})), unary({1, 5}, dims_attr({1, 0})),
                    unary({5, 33}, dims_attr({1, 0})), unary({0, 2}, dims_attr({1, 0}))}});
  add({.name = "slice", .op = Opcode::kSlice, .dtypes = kAll,
       .variants = {unary({5, 6}, slice_attr({1, 0}, {5, 6}, {2, 3})),
                    unary({4, 3}, slice_attr({1, 1}, {3, 3}, {1, 1})),
                    unary({4}, slice_attr({2}, {2}, {1})), unary({1, 40}, slice_attr({0, 3}, {1, 39}, {1, 1}))}});
  add({.name = "concatenate", .op = Opcode::kConcatenate, .dtypes = kAll,
       .variants = {{.operands = {{.dims = {2, 3}}, {.dims = {1, 3}}}, .attrs = dims_attr({0})},
                    {.operands = {{.dims = {2, 1}}, {.dims = {2, 0}}, {.dims = {2, 2}}}, .attrs = dims_attr({1})},
                    {.operands = {{.dims = {3}}}, .attrs = dims_attr({0})},
                    {.operands = std::vector<Operand>(20, Operand{.dims = {2}}), .attrs = dims_attr({0})}}});
  add({.name = "pad", .op = Opcode::kPad, .dtypes = kAll,
       .variants = {unary({2, 3}, slice_attr({1, 0}, {0, 2}, {}, 1.0)),
                    unary({3, 4}, slice_attr({-1, 1}, {1, -2}, {}, 0.0)),  // negative padding crops
                    unary({0, 2}, slice_attr({1, 0}, {1, 1}, {}, 1.0))}});

  // Index ops.
  {
    OpCase c{.name = "gather", .op = Opcode::kGather, .dtypes = kAll};
    c.variants = {{.operands = {{.dims = {5, 3}}, indices({4}, 5)}, .attrs = dims_attr({0})},
                  {.operands = {{.dims = {2, 4}}, indices({2, 3}, 4)}, .attrs = dims_attr({1})},
                  {.operands = {{.dims = {3, 2}}, indices({0}, 3)}, .attrs = dims_attr({0})}};
    add(c);
  }
  {
    OpCase c{.name = "scatter_add", .op = Opcode::kScatterAdd, .dtypes = kAll};
    c.variants = {{.operands = {{.dims = {5, 3}}, indices({4}, 5), {.dims = {4, 3}}}, .attrs = dims_attr({0})},
                  {.operands = {{.dims = {2, 4}}, indices({6}, 4), {.dims = {2, 6}}}, .attrs = dims_attr({1})}};
    add(c);
  }

  // Reductions: several axes, all axes (a scalar), and empty operands.
  for (auto [op, text] : {std::pair{Opcode::kReduceSum, "reduce_sum"}, {Opcode::kReduceMax, "reduce_max"},
                          {Opcode::kReduceMin, "reduce_min"}}) {
    OpCase c{.name = text, .op = op, .dtypes = kAll, .tol_scale = 4};
    c.variants = {unary({3, 4}, dims_attr({1})), unary({2, 3, 4}, dims_attr({0, 2})), unary({37}, dims_attr({0})),
                  unary({4, 1}, dims_attr({1})), unary({0, 3}, dims_attr({0}))};
    add(c);
  }
  add({.name = "argmax", .op = Opcode::kArgmax, .dtypes = kAll,
       .variants = {unary({3, 5}, dims_attr({1})), unary({4, 2}, dims_attr({0})), unary({33}, dims_attr({0}))}});

  // Contractions.
  {
    OpCase c{.name = "dot_general", .op = Opcode::kDotGeneral, .dtypes = kAll, .tol_scale = 10};
    auto dot = [](Dims l, Dims r, ir::DotDims d) { return two(std::move(l), std::move(r), dot_attr(std::move(d))); };
    c.variants = {dot({3, 4}, {4, 2}, {.lhs_contracting = {1}, .rhs_contracting = {0}}),
                  dot({2, 3, 4}, {2, 4, 3},
                      {.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contracting = {2}, .rhs_contracting = {1}}),
                  dot({4, 3}, {5, 4}, {.lhs_contracting = {0}, .rhs_contracting = {1}}),  // transposed operands
                  dot({6}, {6}, {.lhs_contracting = {0}, .rhs_contracting = {0}}),        // to a scalar
                  dot({3, 0}, {0, 2}, {.lhs_contracting = {1}, .rhs_contracting = {0}})};  // empty sum: zeros
    add(c);
  }
  // x: (N, H, W, C)  w: (KH, KW, C/groups, F)  dy: (N, OH, OW, F)
  ir::ConvDims same{.padding_low = {1, 1}, .padding_high = {1, 1}};
  ir::ConvDims strided{.strides = {2, 2}};
  ir::ConvDims grouped{.groups = 2};
  ir::ConvDims dilated{.dilation = {2, 2}};
  add({.name = "convolution", .op = Opcode::kConvolution, .dtypes = kAll,
       .variants = {two({1, 4, 4, 2}, {3, 3, 2, 2}, conv_attr(same)),
                    two({2, 5, 5, 2}, {2, 2, 2, 3}, conv_attr(strided)),
                    two({1, 4, 4, 4}, {2, 2, 2, 4}, conv_attr(grouped)),
                    two({1, 5, 5, 1}, {2, 2, 1, 2}, conv_attr(dilated))},
       .tol_scale = 10});
  add({.name = "conv_backward_input", .op = Opcode::kConvBackwardInput, .dtypes = kAll,
       .variants = {two({1, 4, 4, 2}, {3, 3, 2, 2}, conv_attr(same), Dims{1, 4, 4, 2}),
                    two({2, 2, 2, 3}, {2, 2, 2, 3}, conv_attr(strided), Dims{2, 5, 5, 2}),
                    two({1, 3, 3, 4}, {2, 2, 2, 4}, conv_attr(grouped), Dims{1, 4, 4, 4})},
       .tol_scale = 10});
  add({.name = "conv_backward_filter", .op = Opcode::kConvBackwardFilter, .dtypes = kAll,
       .variants = {two({1, 4, 4, 2}, {1, 4, 4, 2}, conv_attr(same), Dims{3, 3, 2, 2}),
                    two({2, 5, 5, 2}, {2, 2, 2, 3}, conv_attr(strided), Dims{2, 2, 2, 3}),
                    two({1, 4, 4, 4}, {1, 3, 3, 4}, conv_attr(grouped), Dims{2, 2, 2, 4})},
       .tol_scale = 10});

  // Pooling: a 2x2/2 window and a padded 3x3/1 ('same') one.
  const ir::Window pool2{.size = {1, 2, 2, 1}, .strides = {1, 2, 2, 1},
                         .padding_low = {0, 0, 0, 0}, .padding_high = {0, 0, 0, 0}};
  const ir::Window pool3{.size = {1, 3, 3, 1}, .strides = {1, 1, 1, 1},
                         .padding_low = {0, 1, 1, 0}, .padding_high = {0, 1, 1, 0}};
  for (auto [kind, text] : {std::pair{ir::ReduceKind::kMax, "max"}, {ir::ReduceKind::kMean, "mean"}}) {
    const std::vector<DType> dtypes = kind == ir::ReduceKind::kMax ? kAll : kFloats;
    add({.name = str_cat("reduce_window(", text, ")"), .op = Opcode::kReduceWindow, .dtypes = dtypes,
         .variants = {unary({1, 4, 4, 2}, window_attr(kind, pool2)), unary({2, 5, 5, 3}, window_attr(kind, pool3))},
         .tol_scale = 4});
    OpCase g{.name = str_cat("reduce_window_grad(", text, ")"), .op = Opcode::kReduceWindowGrad, .dtypes = dtypes,
             .variants = {two({1, 4, 4, 2}, {1, 2, 2, 2}, window_attr(kind, pool2)),
                          two({2, 5, 5, 3}, {2, 5, 5, 3}, window_attr(kind, pool3))},
             .tol_scale = 4};
    if (kind == ir::ReduceKind::kMax) g.gradient_error = "second-order max pooling";
    add(g);
  }

  add({.name = "rng_bits", .op = Opcode::kRngBits, .dtypes = {DType::kI32},
       .variants = {{.operands = {{.role = Role::kKey}}, .declared = Dims{3, 37}},
                    {.operands = {{.role = Role::kKey}}, .declared = Dims{0, 2}}}});
  for (auto [kind, text] : {std::pair{ir::ReduceKind::kSum, "sum"}, {ir::ReduceKind::kMean, "mean"}}) {
    OpCase c = elementwise(rng, str_cat("all_reduce(", text, ")"), Opcode::kAllReduce,
                           kind == ir::ReduceKind::kSum ? kAll : kFloats, 1);
    for (Variant& v : c.variants) v.attrs.reduce_kind = kind;
    add(c);
  }

  // The other collectives on one replica, a group of one: gathers, scatters and moves of x itself,
  // the permutation {0,0} (and with no pair, zeros). tests/distribute runs them over replicas.
  const auto collective = [](Dims dims) {
    ir::Attrs a;
    a.dims = std::move(dims);
    a.group_size = 1;
    return a;
  };
  add({.name = "all_gather", .op = Opcode::kAllGather, .dtypes = kAll,
       .variants = {unary({3, 5}, collective({1})), unary({4}, collective({0}))}});
  for (auto [kind, text] : {std::pair{ir::ReduceKind::kSum, "sum"}, {ir::ReduceKind::kMean, "mean"}}) {
    ir::Attrs a = collective({0});
    a.reduce_kind = kind;
    add({.name = str_cat("reduce_scatter(", text, ")"), .op = Opcode::kReduceScatter,
         .dtypes = kind == ir::ReduceKind::kSum ? kAll : kFloats, .variants = {unary({2, 3}, a)}});
  }
  add({.name = "all_to_all", .op = Opcode::kAllToAll, .dtypes = kAll,
       .variants = {unary({3, 4}, collective({0, 1})), unary({2, 2, 3}, collective({2, 2}))}});
  {
    ir::Attrs to_self = collective({}), to_none = collective({});
    to_self.source_target_pairs = {{0, 0}};
    add({.name = "collective_permute", .op = Opcode::kCollectivePermute, .dtypes = kAll,
         .variants = {unary({3, 5}, to_self)}});
    add({.name = "collective_permute(no source)", .op = Opcode::kCollectivePermute, .dtypes = kAll,
         .variants = {unary({3, 5}, to_none)}, .values_only = true});
  }

  // A loop fusion as the compiler makes it: exp(x) * y in a body.
  {
    OpCase c = elementwise(rng, "fusion(loop)", Opcode::kFusion, kFloats, 2);
    c.build = [](ir::Builder& b, const std::vector<ir::Instruction*>& ps, const Variant&, DType) {
      ir::Module& m = *b.computation()->module();
      ir::Computation* body = m.add_computation(str_cat("fused", m.computations().size()));
      ir::Builder fb(body);
      ir::Instruction* x = fb.parameter(ps[0]->shape(), "x");
      ir::Instruction* y = fb.parameter(ps[1]->shape(), "y");
      body->add_output(fb.binary(Opcode::kMul, fb.unary(Opcode::kExp, x), y));
      ir::Attrs attrs;
      attrs.body = body;
      attrs.fusion_kind = ir::FusionKind::kLoop;
      Shape out = ps[0]->shape();
      return b.add(Opcode::kFusion, ps, attrs, &out);
    };
    add(c);
  }
  // Index ops with dynamic starts: in range, and past the end (the starts clamp).
  {
    auto box = [](Dims sizes) {
      ir::Attrs a;
      a.limits = std::move(sizes);
      return a;
    };
    Operand start{.dims = {}, .role = Role::kIndex, .int_hi = 6};
    add({.name = "dynamic_slice", .op = Opcode::kDynamicSlice, .dtypes = kAll,
         .variants = {{.operands = {{.dims = {5, 3}}, start, start}, .attrs = box({2, 2})},
                      {.operands = {{.dims = {4}}, start}, .attrs = box({3})},
                      {.operands = {{.dims = {2, 0}}, start, start}, .attrs = box({1, 0})}}});
    add({.name = "dynamic_update_slice", .op = Opcode::kDynamicUpdateSlice, .dtypes = kAll,
         .variants = {{.operands = {{.dims = {5, 3}}, {.dims = {2, 2}}, start, start}},
                      {.operands = {{.dims = {4}}, {.dims = {3}}, start}}}});
  }

  // Control flow over computations that move elements (valid for every dtype): a while that
  // rotates x three times, and conditionals between a rotation and the identity.
  {
    auto rotate = [](ir::Module& m, const Shape& s, const char* name) {
      ir::Computation* c = m.add_computation(str_cat(name, m.computations().size()));
      ir::Builder cb(c);
      ir::Instruction* x = cb.parameter(s, "x");
      const int64_t n = s.dims()[0];
      c->add_output(cb.concatenate({cb.slice(x, {1}, {n}, {1}), cb.slice(x, {0}, {1}, {1})}, 0));
      c->add_output(x);
      return c;
    };
    OpCase w{.name = "while", .op = Opcode::kWhile, .dtypes = kAll,
             .variants = {{.operands = {{.dims = {5}}}}, {.operands = {{.dims = {1}}}}}};
    w.build = [rotate](ir::Builder& b, const std::vector<ir::Instruction*>& ps, const Variant&, DType) {
      ir::Module& m = *b.computation()->module();
      const Shape counter(DType::kI32, {});
      ir::Computation* body = rotate(m, ps[0]->shape(), "rotate");
      ir::Builder bb(body);
      ir::Instruction* bi = body->add_parameter(counter, "i");  // parameter 1; the loop is (x, i)
      body->set_outputs({body->outputs()[0], bb.binary(Opcode::kAdd, bi, bb.scalar(1, DType::kI32))});
      ir::Computation* cond = m.add_computation(str_cat("cond", m.computations().size()));
      ir::Builder cb(cond);
      cb.parameter(ps[0]->shape(), "x");
      ir::Instruction* i = cb.parameter(counter, "i");
      cond->add_output(cb.compare(ir::Comparison::kLt, i, cb.scalar(3, DType::kI32)));
      ir::Instruction* loop = b.while_loop({ps[0], b.scalar(0, DType::kI32)}, cond, body, /*trip_count=*/3);
      return b.get_tuple_element(loop, 0);
    };
    add(w);
    for (auto [name, role, op] : {std::tuple{"conditional(pred)", Role::kPredicate, Opcode::kConditional},
                                  {"conditional(index)", Role::kIndex, Opcode::kConditional},
                                  {"get_tuple_element", Role::kPredicate, Opcode::kGetTupleElement}}) {
      OpCase c{.name = name, .op = op, .dtypes = kAll,
               .variants = {{.operands = {{.dims = {}, .role = role, .int_hi = 4}, {.dims = {4}}}},
                            {.operands = {{.dims = {}, .role = role, .int_hi = 4}, {.dims = {1}}}}}};
      const bool indexed = role == Role::kIndex;
      const size_t result = op == Opcode::kGetTupleElement ? 1 : 0;
      c.build = [rotate, indexed, result](ir::Builder& b, const std::vector<ir::Instruction*>& ps, const Variant&,
                                          DType) {
        ir::Module& m = *b.computation()->module();
        std::vector<ir::Computation*> branches = {rotate(m, ps[1]->shape(), "rotate"), rotate(m, ps[1]->shape(), "again")};
        // The second branch swaps its results: x, then the rotation.
        branches[1]->set_outputs({branches[1]->parameter(0), branches[1]->outputs()[0]});
        if (indexed) branches.push_back(rotate(m, ps[1]->shape(), "third"));
        ir::Instruction* tuple = b.conditional(ps[0], {ps[1]}, branches);
        return b.get_tuple_element(tuple, static_cast<int64_t>(result));
      };
      add(c);
    }
  }
  return cases;
}

// Seeded values for one operand of dtype `t`.
HostTensor operand_value(const Operand& o, DType t, bool integer_valued, uint32_t seed) {
  std::mt19937 gen(seed);
  switch (o.role) {
    case Role::kKey:
      return HostTensor::scalar<int64_t>(static_cast<int64_t>(seed) * 7919 + 11);
    case Role::kPredicate: case Role::kIndex: {
      const int64_t hi = o.role == Role::kPredicate ? 2 : o.int_hi;
      HostTensor r(Shape(DType::kI64, o.dims));
      std::uniform_int_distribution<int64_t> dist(0, hi - 1);
      for (int64_t& v : r.data<int64_t>()) v = dist(gen);
      return r.astype(o.role == Role::kPredicate ? DType::kBool : DType::kI32);
    }
    case Role::kF32: t = DType::kF32; break;
    case Role::kData: break;
  }
  if (is_floating(t) && !integer_valued) return testing::random_f64(o.dims, seed, o.lo, o.hi).astype(t);
  int64_t lo = o.int_lo, hi = o.int_hi;
  if (t == DType::kU8) lo = std::max<int64_t>(lo, 0);
  if (t == DType::kBool) lo = 0, hi = 2;
  HostTensor r(Shape(DType::kI64, o.dims));
  std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
  for (int64_t& v : r.data<int64_t>()) v = dist(gen);
  return r.astype(t);
}

}  // namespace

std::unique_ptr<ir::Module> OpCase::module(DType t) const {
  auto m = std::make_unique<ir::Module>(name);
  ir::Builder b(m->entry());
  std::vector<ir::Instruction*> outputs;
  for (size_t k = 0; k < variants.size(); ++k) {
    const Variant& v = variants[k];
    std::vector<ir::Instruction*> ps;
    for (size_t i = 0; i < v.operands.size(); ++i) {
      HostTensor sample = operand_value(v.operands[i], t, false, 0);
      ps.push_back(b.parameter(sample.shape(), str_cat("v", k, "_", i)));
    }
    if (build) {
      outputs.push_back(build(b, ps, v, t));
    } else {
      Shape declared(declared_dtype.value_or(t), v.declared.value_or(Dims{}));
      outputs.push_back(b.add(op, ps, v.attrs, v.declared ? &declared : nullptr));
    }
  }
  m->entry()->set_outputs(outputs);
  return m;
}

std::vector<HostTensor> OpCase::arguments(DType t) const {
  std::vector<HostTensor> args;
  for (size_t k = 0; k < variants.size(); ++k)
    for (size_t i = 0; i < variants[k].operands.size(); ++i)
      args.push_back(
          operand_value(variants[k].operands[i], t, integer_valued, static_cast<uint32_t>(100 * k + i + 1)));
  return args;
}

double OpCase::tolerance(DType t) const {
  switch (t) {
    case DType::kF64: return 1e-9 * tol_scale;
    case DType::kF32: return 2e-6 * tol_scale;
    case DType::kBF16: return 1e-2 * tol_scale;
    case DType::kF16: return 2e-3 * tol_scale;
    case DType::kI32: case DType::kI64: case DType::kU8: case DType::kBool: return 0.0;
    case DType::kString: break;
  }
  return 0.0;
}

std::string OpCase::describe_variant(size_t k, DType t) const {
  std::string s = "(";
  for (const Operand& o : variants[k].operands)
    s += str_cat(s.size() > 1 ? ", " : "", operand_value(o, t, false, 0).shape());
  return s + ")";
}

std::vector<HostTensor> OpCase::gradient_arguments(size_t k) const {
  std::vector<HostTensor> args;
  const Variant& v = variants[k];
  for (size_t i = 0; i < v.operands.size(); ++i) {
    Operand o = v.operands[i];
    if (o.role == Role::kF32) o.role = Role::kData;
    args.push_back(operand_value(o, DType::kF64, false, static_cast<uint32_t>(i + 1)));
  }
  return args;
}

Tensor OpCase::apply(size_t k, const std::vector<Tensor>& xs) const {
  const Variant& v = variants[k];
  Shape declared(DType::kF64, v.declared.value_or(Dims{}));
  return trace::emit(op, xs, v.attrs, v.declared ? &declared : nullptr);
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = make_cases();
  return cases;
}

std::string compare_values(const HostTensor& actual, const HostTensor& expected, double tol) {
  if (!(actual.shape() == expected.shape()))
    return str_cat("shape ", actual.shape(), ", expected ", expected.shape());
  auto a = actual.to_vector<double>();
  auto e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == e[i] || (std::isnan(a[i]) && std::isnan(e[i]))) continue;
    if (std::fabs(a[i] - e[i]) <= tol * (1.0 + std::fabs(e[i]))) continue;
    return str_cat("element ", i, " is ", a[i], ", expected ", e[i], " (tolerance ", tol, ")");
  }
  return "";
}

}  // namespace kiln::conformance
