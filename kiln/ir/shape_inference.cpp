// One inference rule per op family; every failure names the op and both shapes.
#include "kiln/ir/shape_inference.h"

#include <algorithm>
#include <set>

#include "kiln/core/check.h"
#include "kiln/ir/collectives.h"
#include "kiln/ir/computation.h"
#include "kiln/ir/elementwise.h"

namespace kiln::ir {
namespace {

struct Ctx {
  Opcode op;
  std::span<const Shape> operands;
  const Attrs& attrs;
  const Shape* declared;
  const std::string& where;

  std::string prefix() const {
    return where.empty() ? str_cat("[", opcode_name(op), "] ")
                         : str_cat("[", where, "/", opcode_name(op), "] ");
  }
  [[noreturn]] void shape_error(const std::string& what) const {
    throw ShapeError(prefix() + what);
  }
  [[noreturn]] void dtype_error(const std::string& what) const {
    throw DTypeError(prefix() + what);
  }
  const Shape& in(size_t i) const { return operands[i]; }
  const Shape& need_declared() const {
    KILN_CHECK(declared != nullptr, opcode_name(op), " needs a declared result shape");
    return *declared;
  }
  void check_axes(const Dims& axes, int rank, const char* what) const {
    std::set<int64_t> seen;
    for (int64_t a : axes)
      if (a < 0 || a >= rank || !seen.insert(a).second)
        shape_error(str_cat(what, " ", dims_to_string(axes), " are invalid for rank ", rank,
                            ": expected distinct axes in [0, ", rank - 1, "]."));
  }
};

bool is_index_type(DType t) { return t == DType::kI32 || t == DType::kI64; }

Shape elementwise_shape(const Ctx& c) {
  const Shape& a = c.in(0);
  for (size_t i = 1; i < c.operands.size(); ++i) {
    const Shape& b = c.in(i);
    size_t first = c.op == Opcode::kSelect ? 1 : 0;  // select's predicate is bool
    if (a.dims() != b.dims())
      c.shape_error(str_cat("operands must have equal dims: received ", a, " and ", b,
                            ". Hint: broadcast explicitly with broadcast_in_dim."));
    if (i > first && c.in(first).dtype() != b.dtype())
      c.dtype_error(str_cat("operands must have equal dtypes: received ", c.in(first), " and ", b,
                            ". Hint: insert convert()."));
  }
  if (c.op == Opcode::kCompare) return a.with_dtype(DType::kBool);
  if (c.op == Opcode::kSelect) {
    if (a.dtype() != DType::kBool) c.dtype_error(str_cat("predicate must be bool, received ", a, "."));
    return c.in(1);
  }
  if (c.op == Opcode::kConvert) {
    const Shape& d = c.need_declared();
    if (d.dims() != a.dims()) c.shape_error(str_cat("convert keeps dims: ", a, " cannot become ", d, "."));
    return d;
  }
  // A row of the elementwise table: its dtypes column decides.
  const elementwise::RowInfo* row = elementwise::find_row(c.op);
  KILN_CHECK(row != nullptr, opcode_name(c.op), " is not elementwise");
  if (!elementwise::accepts(row->dtypes, a.dtype())) {
    if (row->dtypes == elementwise::DTypes::kFloat)
      c.dtype_error(str_cat("needs a floating-point operand, received ", a, ". Hint: convert to f32 first."));
    c.dtype_error(str_cat("does not take bool operands, received ", a, "."));
  }
  return a;
}

Shape broadcast_in_dim(const Ctx& c) {
  const Shape& a = c.in(0);
  const Shape& d = c.need_declared();
  const Dims& map = c.attrs.dims;
  if (static_cast<int>(map.size()) != a.rank())
    c.shape_error(str_cat("broadcast_dimensions ", dims_to_string(map), " must have one entry per ",
                          "operand dim of ", a, "."));
  if (d.dtype() != a.dtype()) c.dtype_error(str_cat("cannot change dtype ", a, " -> ", d, "."));
  c.check_axes(map, d.rank(), "broadcast_dimensions");
  for (size_t i = 0; i < map.size(); ++i) {
    if (i > 0 && map[i] <= map[i - 1])
      c.shape_error(str_cat("broadcast_dimensions ", dims_to_string(map), " must be increasing."));
    int64_t od = a.dims()[i], rd = d.dims()[static_cast<size_t>(map[i])];
    if (od != 1 && od != rd)
      c.shape_error(str_cat("cannot broadcast ", a, " to ", d, ": operand dim ", i, " is ", od,
                            ", result dim ", map[i], " is ", rd, "."));
  }
  return d;
}

Shape reshape(const Ctx& c) {
  const Shape& a = c.in(0);
  const Shape& d = c.need_declared();
  if (d.num_elements() != a.num_elements() || d.dtype() != a.dtype())
    c.shape_error(str_cat("cannot reshape ", a, " (", a.num_elements(), " elements) to ", d, " (",
                          d.num_elements(), " elements)."));
  return d;
}

Shape transpose(const Ctx& c) {
  const Shape& a = c.in(0);
  const Dims& perm = c.attrs.dims;
  if (static_cast<int>(perm.size()) != a.rank())
    c.shape_error(str_cat("permutation ", dims_to_string(perm), " does not match ", a, "."));
  c.check_axes(perm, a.rank(), "permutation");
  Dims out;
  for (int64_t p : perm) out.push_back(a.dims()[static_cast<size_t>(p)]);
  return a.with_dims(out);
}

Shape slice(const Ctx& c) {
  const Shape& a = c.in(0);
  const Attrs& t = c.attrs;
  const size_t r = static_cast<size_t>(a.rank());
  if (t.starts.size() != r || t.limits.size() != r || t.strides.size() != r)
    c.shape_error(str_cat("start/limit/stride need ", r, " entries each for ", a, "."));
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    if (t.starts[i] < 0 || t.limits[i] < t.starts[i] || t.limits[i] > a.dims()[i] || t.strides[i] < 1)
      c.shape_error(str_cat("slice [", t.starts[i], ":", t.limits[i], ":", t.strides[i],
                            "] is out of range for dim ", i, " of ", a, "."));
    out[i] = (t.limits[i] - t.starts[i] + t.strides[i] - 1) / t.strides[i];
  }
  return a.with_dims(out);
}

Shape concatenate(const Ctx& c) {
  if (c.operands.empty()) c.shape_error("needs at least one operand.");
  const Shape& a = c.in(0);
  if (c.attrs.dims.size() != 1) c.shape_error("needs exactly one axis.");
  int64_t axis = c.attrs.dims[0];
  if (axis < 0 || axis >= a.rank()) c.shape_error(str_cat("axis ", axis, " is invalid for ", a, "."));
  Dims out = a.dims();
  for (size_t i = 1; i < c.operands.size(); ++i) {
    const Shape& b = c.in(i);
    if (b.dtype() != a.dtype()) c.dtype_error(str_cat("dtypes differ: ", a, " and ", b, "."));
    Dims bd = b.dims();
    if (b.rank() != a.rank()) c.shape_error(str_cat("ranks differ: ", a, " and ", b, "."));
    bd[static_cast<size_t>(axis)] = out[static_cast<size_t>(axis)];
    if (bd != out)
      c.shape_error(str_cat("operands differ outside axis ", axis, ": ", a, " and ", b, "."));
    out[static_cast<size_t>(axis)] += b.dims()[static_cast<size_t>(axis)];
  }
  return a.with_dims(out);
}

Shape pad(const Ctx& c) {
  const Shape& a = c.in(0);
  const size_t r = static_cast<size_t>(a.rank());
  if (c.attrs.starts.size() != r || c.attrs.limits.size() != r)
    c.shape_error(str_cat("low/high padding need ", r, " entries each for ", a, "."));
  Dims out = a.dims();
  for (size_t i = 0; i < r; ++i) {
    out[i] += c.attrs.starts[i] + c.attrs.limits[i];
    if (out[i] < 0) c.shape_error(str_cat("negative padding removes all of dim ", i, "."));
  }
  return a.with_dims(out);
}

// gather takes rows along `axis` (like jnp.take): operand[:axis] + indices + operand[axis+1:].
Shape gather_shape(const Ctx& c, const Shape& operand, const Shape& indices) {
  if (!is_index_type(indices.dtype()))
    c.dtype_error(str_cat("indices must be i32 or i64, received ", indices, "."));
  if (c.attrs.dims.size() != 1 || c.attrs.dims[0] < 0 || c.attrs.dims[0] >= operand.rank())
    c.shape_error(str_cat("needs one axis in [0, ", operand.rank() - 1, "] for ", operand, "."));
  size_t axis = static_cast<size_t>(c.attrs.dims[0]);
  Dims out(operand.dims().begin(), operand.dims().begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices.dims().begin(), indices.dims().end());
  out.insert(out.end(), operand.dims().begin() + static_cast<std::ptrdiff_t>(axis) + 1,
             operand.dims().end());
  return operand.with_dims(out);
}

Shape scatter_add(const Ctx& c) {
  const Shape& operand = c.in(0);
  Shape expected = gather_shape(c, operand, c.in(1));
  if (!(c.in(2) == expected))
    c.shape_error(str_cat("updates must be ", expected, " (the gather shape), received ", c.in(2), "."));
  return operand;
}

// dynamic_slice(x, starts...) and dynamic_update_slice(x, update, starts...): one scalar
// integer start per dim of x, after the first operand (two for the update).
Shape dynamic_slice(const Ctx& c) {
  const bool update = c.op == Opcode::kDynamicUpdateSlice;
  const size_t first_start = update ? 2 : 1;
  if (c.operands.size() < first_start) c.shape_error("needs an operand (and an update).");
  const Shape& x = c.in(0);
  const size_t r = static_cast<size_t>(x.rank());
  if (c.operands.size() != first_start + r)
    c.shape_error(str_cat("needs one start index per dim of ", x, " (", r, "), received ",
                          c.operands.size() - first_start, "."));
  for (size_t i = first_start; i < c.operands.size(); ++i)
    if (!is_index_type(c.in(i).dtype()) || c.in(i).rank() != 0)
      c.dtype_error(str_cat("start indices must be i32 or i64 scalars, received ", c.in(i), "."));
  Dims sizes = update ? c.in(1).dims() : c.attrs.limits;
  if (update && c.in(1).dtype() != x.dtype())
    c.dtype_error(str_cat("update must be ", x.dtype(), " like the operand, received ", c.in(1), "."));
  if (sizes.size() != r)
    c.shape_error(str_cat(update ? "update " : "slice sizes ", dims_to_string(sizes), " must have rank ",
                          r, " like ", x, "."));
  for (size_t d = 0; d < r; ++d)
    if (sizes[d] < 0 || sizes[d] > x.dims()[d])
      c.shape_error(str_cat(update ? "update " : "slice sizes ", dims_to_string(sizes), " do not fit in ",
                            x, "."));
  return update ? x : x.with_dims(sizes);
}

// Parameters of `callee` must be `shapes`, for a while's condition and body and the branches.
void check_signature(const Ctx& c, const Computation* callee, const char* role,
                     std::span<const Shape> shapes) {
  if (callee == nullptr) c.shape_error(str_cat("has no ", role, " computation."));
  const auto& params = callee->parameters();
  if (params.size() != shapes.size())
    c.shape_error(str_cat(role, " ", callee->name(), " takes ", params.size(), " parameters, expected ",
                          shapes.size(), " (one per operand)."));
  for (size_t i = 0; i < shapes.size(); ++i)
    if (!(params[i]->shape() == shapes[i]))
      c.shape_error(str_cat(role, " ", callee->name(), " parameter ", i, " is ", params[i]->shape(),
                            ", the operand is ", shapes[i], "."));
}

std::vector<Shape> output_shapes(const Computation& c) {
  std::vector<Shape> out;
  for (const Instruction* o : c.outputs()) out.push_back(o->shape());
  return out;
}

Shape while_loop(const Ctx& c) {
  if (c.operands.empty()) c.shape_error("needs at least one carried value.");
  check_signature(c, c.attrs.condition, "condition", c.operands);
  const auto& cond_out = c.attrs.condition->outputs();
  if (cond_out.size() != 1 || !(cond_out[0]->shape() == Shape(DType::kBool, {})))
    c.shape_error(str_cat("condition ", c.attrs.condition->name(), " must return one bool[], returns (",
                          str_join(output_shapes(*c.attrs.condition), ", "), ")."));
  check_signature(c, c.attrs.body, "body", c.operands);
  std::vector<Shape> body_out = output_shapes(*c.attrs.body);
  if (!std::equal(body_out.begin(), body_out.end(), c.operands.begin(), c.operands.end()))
    c.shape_error(str_cat("body ", c.attrs.body->name(), " returns (", str_join(body_out, ", "),
                          ") but the carried values are (", str_join(c.operands, ", "),
                          "): each iteration must return values of the carried shapes."));
  if (c.attrs.trip_count < -1) c.shape_error(str_cat("trip_count ", c.attrs.trip_count, " is negative."));
  return tuple_placeholder_shape();
}

Shape conditional(const Ctx& c) {
  if (c.operands.empty()) c.shape_error("needs a predicate or branch index.");
  const Shape& selector = c.in(0);
  const auto& branches = c.attrs.branches;
  if (selector == Shape(DType::kBool, {})) {
    if (branches.size() != 2)
      c.shape_error(str_cat("a bool predicate needs 2 branches (true, false), received ", branches.size(), "."));
  } else if (selector == Shape(DType::kI32, {})) {
    if (branches.empty()) c.shape_error("an i32 branch index needs at least one branch.");
  } else {
    c.dtype_error(str_cat("selector must be bool[] or i32[], received ", selector, "."));
  }
  std::span<const Shape> operands = c.operands.subspan(1);
  std::vector<Shape> first;
  for (size_t i = 0; i < branches.size(); ++i) {
    check_signature(c, branches[i], "branch", operands);
    std::vector<Shape> out = output_shapes(*branches[i]);
    if (i == 0) first = out;
    else if (out != first)
      c.shape_error(str_cat("branch ", i, " returns (", str_join(out, ", "), ") but branch 0 returns (",
                            str_join(first, ", "), "): every branch must return the same shapes."));
  }
  return tuple_placeholder_shape();
}

Shape get_tuple_element(const Ctx& c) {
  if (!(c.in(0) == tuple_placeholder_shape()))
    c.shape_error(str_cat("reads a result of a while or conditional, received a ", c.in(0), " value."));
  if (c.attrs.tuple_index < 0) c.shape_error(str_cat("tuple_index ", c.attrs.tuple_index, " is negative."));
  return c.need_declared();
}

Shape reduce(const Ctx& c) {
  const Shape& a = c.in(0);
  const Dims& axes = c.attrs.dims;
  c.check_axes(axes, a.rank(), "reduction axes");
  if (!std::is_sorted(axes.begin(), axes.end()))
    c.shape_error(str_cat("reduction axes ", dims_to_string(axes), " must be sorted."));
  if (c.op == Opcode::kArgmax && axes.size() != 1)
    c.shape_error("argmax reduces exactly one axis.");
  Dims out;
  for (int i = 0; i < a.rank(); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(a.dims()[static_cast<size_t>(i)]);
  return Shape(c.op == Opcode::kArgmax ? DType::kI32 : a.dtype(), out);
}

Shape dot_general(const Ctx& c) {
  const Shape& l = c.in(0);
  const Shape& r = c.in(1);
  const DotDims& d = c.attrs.dot;
  if (l.dtype() != r.dtype()) c.dtype_error(str_cat("operand dtypes differ: ", l, " and ", r, "."));
  if (d.lhs_batch.size() != d.rhs_batch.size() || d.lhs_contracting.size() != d.rhs_contracting.size())
    c.shape_error("lhs and rhs need as many batch and contracting dims as each other.");
  Dims lused = d.lhs_batch, rused = d.rhs_batch;
  lused.insert(lused.end(), d.lhs_contracting.begin(), d.lhs_contracting.end());
  rused.insert(rused.end(), d.rhs_contracting.begin(), d.rhs_contracting.end());
  c.check_axes(lused, l.rank(), "lhs batch+contracting dims");
  c.check_axes(rused, r.rank(), "rhs batch+contracting dims");
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (l.dims()[static_cast<size_t>(d.lhs_batch[i])] != r.dims()[static_cast<size_t>(d.rhs_batch[i])])
      c.shape_error(str_cat("batch dims differ: ", l, " and ", r, "."));
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i) {
    int64_t ld = l.dims()[static_cast<size_t>(d.lhs_contracting[i])];
    int64_t rd = r.dims()[static_cast<size_t>(d.rhs_contracting[i])];
    if (ld != rd)
      c.shape_error(str_cat("contracting dims differ: ", l, " dim ", d.lhs_contracting[i], " is ", ld,
                            ", ", r, " dim ", d.rhs_contracting[i], " is ", rd, "."));
  }
  Dims out;
  for (int64_t b : d.lhs_batch) out.push_back(l.dims()[static_cast<size_t>(b)]);
  for (int i = 0; i < l.rank(); ++i)
    if (std::find(lused.begin(), lused.end(), i) == lused.end()) out.push_back(l.dims()[static_cast<size_t>(i)]);
  for (int i = 0; i < r.rank(); ++i)
    if (std::find(rused.begin(), rused.end(), i) == rused.end()) out.push_back(r.dims()[static_cast<size_t>(i)]);
  return l.with_dims(out);
}

void check_conv_attrs(const Ctx& c) {
  const ConvDims& v = c.attrs.conv;
  if (v.strides.size() != 2 || v.padding_low.size() != 2 || v.padding_high.size() != 2 ||
      v.dilation.size() != 2 || v.groups < 1)
    c.shape_error("strides, padding and dilation need 2 entries (H, W); groups >= 1.");
  for (int i = 0; i < 2; ++i)
    if (v.strides[static_cast<size_t>(i)] < 1 || v.dilation[static_cast<size_t>(i)] < 1)
      c.shape_error("strides and dilation must be >= 1.");
}

// x: (N, H, W, C)  w: (KH, KW, C/groups, F)  ->  (N, OH, OW, F)
Shape conv_forward_shape(const Ctx& c, const Shape& x, const Shape& w) {
  check_conv_attrs(c);
  const ConvDims& v = c.attrs.conv;
  if (x.rank() != 4 || w.rank() != 4)
    c.shape_error(str_cat("expects NHWC input and HWIO filter, received ", x, " and ", w, "."));
  if (x.dtype() != w.dtype()) c.dtype_error(str_cat("dtypes differ: ", x, " and ", w, "."));
  if (x.dims()[3] != w.dims()[2] * v.groups || w.dims()[3] % v.groups != 0)
    c.shape_error(str_cat("input channels ", x.dims()[3], " must equal filter in-channels ",
                          w.dims()[2], " x groups ", v.groups, " (filter ", w, ")."));
  Dims out = {x.dims()[0], 0, 0, w.dims()[3]};
  for (size_t i = 0; i < 2; ++i) {
    out[i + 1] = windowed_output_size(x.dims()[i + 1], w.dims()[i], v.strides[i], v.padding_low[i],
                                      v.padding_high[i], v.dilation[i]);
    if (out[i + 1] <= 0)
      c.shape_error(str_cat("filter ", w, " does not fit input ", x, " with this padding."));
  }
  return x.with_dims(out);
}

Shape convolution(const Ctx& c) {
  switch (c.op) {
    case Opcode::kConvolution:
      return conv_forward_shape(c, c.in(0), c.in(1));
    case Opcode::kConvBackwardInput: {  // (dy, w) -> x; declared is x's shape
      const Shape& x = c.need_declared();
      if (!(conv_forward_shape(c, x, c.in(1)) == c.in(0)))
        c.shape_error(str_cat("dy ", c.in(0), " does not match input ", x, " and filter ", c.in(1), "."));
      return x;
    }
    case Opcode::kConvBackwardFilter: {  // (x, dy) -> w; declared is w's shape
      const Shape& w = c.need_declared();
      if (!(conv_forward_shape(c, c.in(0), w) == c.in(1)))
        c.shape_error(str_cat("dy ", c.in(1), " does not match input ", c.in(0), " and filter ", w, "."));
      return w;
    }
#define KILN_SKIP_Contraction
#include "kiln/ir/opcode_cases.inc"
    case Opcode::kDotGeneral:
      break;
  }
  c.shape_error("not a convolution.");
}

Shape reduce_window(const Ctx& c) {
  const Shape& x = c.in(0);
  const Window& w = c.attrs.window;
  const size_t r = static_cast<size_t>(x.rank());
  if (w.size.size() != r || w.strides.size() != r || w.padding_low.size() != r || w.padding_high.size() != r)
    c.shape_error(str_cat("window size/strides/padding need ", r, " entries each for ", x, "."));
  if (c.attrs.reduce_kind != ReduceKind::kMax && c.attrs.reduce_kind != ReduceKind::kMean)
    c.shape_error("reduce_window supports max and mean.");
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    if (w.size[i] < 1 || w.strides[i] < 1) c.shape_error("window sizes and strides must be >= 1.");
    out[i] = windowed_output_size(x.dims()[i], w.size[i], w.strides[i], w.padding_low[i], w.padding_high[i], 1);
    if (out[i] <= 0) c.shape_error(str_cat("window does not fit ", x, "."));
  }
  Shape y = x.with_dims(out);
  if (c.op == Opcode::kReduceWindowGrad) {  // (x, dy) -> dx
    if (!(c.in(1) == y)) c.shape_error(str_cat("dy must be ", y, ", received ", c.in(1), "."));
    return x;
  }
  return y;
}

}  // namespace

Shape tuple_placeholder_shape() { return Shape(DType::kU8, {0}); }

std::vector<Shape> tuple_result_shapes(const Instruction& tuple) {
  KILN_CHECK(is_tuple_op(tuple.opcode()), opcode_name(tuple.opcode()), " %", tuple.id(), " yields no tuple");
  if (tuple.opcode() == Opcode::kWhile) {
    std::vector<Shape> out;
    for (const Instruction* op : tuple.operands()) out.push_back(op->shape());
    return out;
  }
  KILN_CHECK(!tuple.attrs().branches.empty() && tuple.attrs().branches[0] != nullptr,
             "conditional %", tuple.id(), " has no branches");
  return output_shapes(*tuple.attrs().branches[0]);
}

int64_t windowed_output_size(int64_t in, int64_t window, int64_t stride, int64_t pad_low,
                             int64_t pad_high, int64_t dilation) {
  int64_t effective = (window - 1) * dilation + 1;
  int64_t span = in + pad_low + pad_high - effective;
  return span < 0 ? 0 : span / stride + 1;
}

Shape infer_shape(Opcode op, std::span<const Shape> operands, const Attrs& attrs,
                  const Shape* declared, const std::string& where) {
  Ctx c{op, operands, attrs, declared, where};
  int arity = opcode_arity(op);
  if (arity >= 0 && static_cast<int>(operands.size()) != arity)
    c.shape_error(str_cat("expects ", arity, " operands, received ", operands.size(), "."));
  switch (op) {
    case Opcode::kParameter:
      return c.need_declared();
    case Opcode::kConstant:
      if (!attrs.literal.defined()) c.shape_error("constant without a value.");
      return attrs.literal.shape();
    case Opcode::kIota: {
      const Shape& d = c.need_declared();
      if (attrs.dims.size() != 1 || attrs.dims[0] < 0 || attrs.dims[0] >= d.rank())
        c.shape_error(str_cat("iota needs one axis in [0, ", d.rank() - 1, "] for ", d, "."));
      return d;
    }
#define KILN_UNARY(N, ...) case Opcode::k##N:
#define KILN_BINARY(N, ...) case Opcode::k##N:
#include "kiln/ir/elementwise.def"
#undef KILN_UNARY
#undef KILN_BINARY
    case Opcode::kConvert: case Opcode::kCompare: case Opcode::kSelect:
      return elementwise_shape(c);
    case Opcode::kBroadcastInDim: return broadcast_in_dim(c);
    case Opcode::kReshape: return reshape(c);
    case Opcode::kTranspose: return transpose(c);
    case Opcode::kSlice: return slice(c);
    case Opcode::kConcatenate: return concatenate(c);
    case Opcode::kPad: return pad(c);
    case Opcode::kGather: return gather_shape(c, c.in(0), c.in(1));
    case Opcode::kScatterAdd: return scatter_add(c);
    case Opcode::kDynamicSlice: case Opcode::kDynamicUpdateSlice: return dynamic_slice(c);
    case Opcode::kReduceSum: case Opcode::kReduceMax: case Opcode::kReduceMin: case Opcode::kArgmax:
      return reduce(c);
    case Opcode::kDotGeneral: return dot_general(c);
    case Opcode::kConvolution: case Opcode::kConvBackwardInput: case Opcode::kConvBackwardFilter:
      return convolution(c);
    case Opcode::kReduceWindow: case Opcode::kReduceWindowGrad:
      return reduce_window(c);
    case Opcode::kRngBits: {
      if (c.in(0).dtype() != DType::kI64 || c.in(0).rank() != 0)
        c.dtype_error(str_cat("key must be an i64 scalar, received ", c.in(0), "."));
      const Shape& d = c.need_declared();
      if (d.dtype() != DType::kI32) c.dtype_error(str_cat("produces i32 bits, declared ", d, "."));
      return d;
    }
    case Opcode::kAllReduce: case Opcode::kAllGather: case Opcode::kReduceScatter: case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
      return collective_shape(op, c.in(0), attrs, c.prefix());
    case Opcode::kFusion:
      return c.need_declared();
    case Opcode::kWhile: return while_loop(c);
    case Opcode::kConditional: return conditional(c);
    case Opcode::kGetTupleElement: return get_tuple_element(c);
  }
  KILN_CHECK(false, "unhandled opcode ", opcode_name(op));
}

}  // namespace kiln::ir
