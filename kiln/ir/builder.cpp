// Builder methods: pack the attributes, infer the shape, append.
#include "kiln/ir/builder.h"

#include "kiln/core/dtype_dispatch.h"
#include "kiln/ir/shape_inference.h"

namespace kiln::ir {

Instruction* Builder::add(Opcode op, std::vector<Instruction*> operands, Attrs attrs,
                          const Shape* declared) {
  std::vector<Shape> shapes;
  shapes.reserve(operands.size());
  for (Instruction* o : operands) shapes.push_back(o->shape());
  Shape result = infer_shape(op, shapes, attrs, declared, source_);
  Instruction* inst = computation_->add(op, std::move(result), std::move(operands), std::move(attrs));
  inst->set_source(source_);
  return inst;
}

Instruction* Builder::parameter(Shape shape, std::string name) {
  Instruction* p = computation_->add_parameter(std::move(shape), std::move(name));
  p->set_source(source_);
  return p;
}

Instruction* Builder::constant(HostTensor value) {
  Attrs a;
  a.literal = std::move(value);
  return add(Opcode::kConstant, {}, std::move(a));
}

Instruction* Builder::scalar(double value, DType dtype) {
  HostTensor t(Shape(dtype, {}));
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *static_cast<T*>(t.raw_data()) = from_double<T>(value);
  });
  return constant(std::move(t));
}

Instruction* Builder::full(const Shape& shape, double value) {
  Instruction* s = scalar(value, shape.dtype());
  if (shape.rank() == 0) return s;
  return broadcast_in_dim(s, shape.dims(), {});
}

Instruction* Builder::iota(Shape shape, int64_t axis) {
  Attrs a;
  a.dims = {axis};
  return add(Opcode::kIota, {}, std::move(a), &shape);
}

Instruction* Builder::unary(Opcode op, Instruction* x) { return add(op, {x}, {}); }

Instruction* Builder::convert(Instruction* x, DType dtype) {
  Shape s = x->shape().with_dtype(dtype);
  return add(Opcode::kConvert, {x}, {}, &s);
}

Instruction* Builder::binary(Opcode op, Instruction* lhs, Instruction* rhs) {
  return add(op, {lhs, rhs}, {});
}

Instruction* Builder::compare(Comparison direction, Instruction* lhs, Instruction* rhs) {
  Attrs a;
  a.comparison = direction;
  return add(Opcode::kCompare, {lhs, rhs}, std::move(a));
}

Instruction* Builder::select(Instruction* predicate, Instruction* on_true, Instruction* on_false) {
  return add(Opcode::kSelect, {predicate, on_true, on_false}, {});
}

Instruction* Builder::broadcast_in_dim(Instruction* x, Dims result_dims, Dims broadcast_dims) {
  Attrs a;
  a.dims = std::move(broadcast_dims);
  Shape s(x->dtype(), std::move(result_dims));
  return add(Opcode::kBroadcastInDim, {x}, std::move(a), &s);
}

Instruction* Builder::reshape(Instruction* x, Dims dims) {
  Shape s(x->dtype(), std::move(dims));
  return add(Opcode::kReshape, {x}, {}, &s);
}

Instruction* Builder::transpose(Instruction* x, Dims permutation) {
  Attrs a;
  a.dims = std::move(permutation);
  return add(Opcode::kTranspose, {x}, std::move(a));
}

Instruction* Builder::slice(Instruction* x, Dims starts, Dims limits, Dims strides) {
  Attrs a;
  a.starts = std::move(starts);
  a.limits = std::move(limits);
  a.strides = std::move(strides);
  return add(Opcode::kSlice, {x}, std::move(a));
}

Instruction* Builder::concatenate(std::vector<Instruction*> xs, int64_t axis) {
  Attrs a;
  a.dims = {axis};
  return add(Opcode::kConcatenate, std::move(xs), std::move(a));
}

Instruction* Builder::pad(Instruction* x, Dims low, Dims high, double value) {
  Attrs a;
  a.starts = std::move(low);
  a.limits = std::move(high);
  a.scalar = value;
  return add(Opcode::kPad, {x}, std::move(a));
}

Instruction* Builder::gather(Instruction* operand, Instruction* indices, int64_t axis) {
  Attrs a;
  a.dims = {axis};
  return add(Opcode::kGather, {operand, indices}, std::move(a));
}

Instruction* Builder::scatter_add(Instruction* operand, Instruction* indices, Instruction* updates,
                                  int64_t axis) {
  Attrs a;
  a.dims = {axis};
  return add(Opcode::kScatterAdd, {operand, indices, updates}, std::move(a));
}

Instruction* Builder::reduce(Opcode op, Instruction* x, Dims axes) {
  Attrs a;
  a.dims = std::move(axes);
  return add(op, {x}, std::move(a));
}

Instruction* Builder::argmax(Instruction* x, int64_t axis) {
  Attrs a;
  a.dims = {axis};
  return add(Opcode::kArgmax, {x}, std::move(a));
}

Instruction* Builder::dot_general(Instruction* lhs, Instruction* rhs, DotDims dims) {
  Attrs a;
  a.dot = std::move(dims);
  return add(Opcode::kDotGeneral, {lhs, rhs}, std::move(a));
}

Instruction* Builder::convolution(Instruction* x, Instruction* w, ConvDims dims) {
  Attrs a;
  a.conv = std::move(dims);
  return add(Opcode::kConvolution, {x, w}, std::move(a));
}

Instruction* Builder::conv_backward_input(Instruction* dy, Instruction* w, const Shape& x_shape,
                                          ConvDims dims) {
  Attrs a;
  a.conv = std::move(dims);
  return add(Opcode::kConvBackwardInput, {dy, w}, std::move(a), &x_shape);
}

Instruction* Builder::conv_backward_filter(Instruction* x, Instruction* dy, const Shape& w_shape,
                                           ConvDims dims) {
  Attrs a;
  a.conv = std::move(dims);
  return add(Opcode::kConvBackwardFilter, {x, dy}, std::move(a), &w_shape);
}

Instruction* Builder::reduce_window(Instruction* x, ReduceKind kind, Window window) {
  Attrs a;
  a.reduce_kind = kind;
  a.window = std::move(window);
  return add(Opcode::kReduceWindow, {x}, std::move(a));
}

Instruction* Builder::reduce_window_grad(Instruction* x, Instruction* dy, ReduceKind kind,
                                         Window window) {
  Attrs a;
  a.reduce_kind = kind;
  a.window = std::move(window);
  return add(Opcode::kReduceWindowGrad, {x, dy}, std::move(a));
}

Instruction* Builder::rng_bits(Instruction* key, Dims dims) {
  Shape s(DType::kI32, std::move(dims));
  return add(Opcode::kRngBits, {key}, {}, &s);
}

Instruction* Builder::all_reduce(Instruction* x, ReduceKind kind, std::vector<Dims> groups) {
  Attrs a;
  a.reduce_kind = kind;
  if (!groups.empty()) a.group_size = static_cast<int64_t>(groups[0].size());
  a.replica_groups = std::move(groups);
  return add(Opcode::kAllReduce, {x}, std::move(a));
}

namespace {
Attrs collective_attrs(Dims dims, int64_t group_size, std::vector<Dims> groups) {
  Attrs a;
  a.dims = std::move(dims);
  a.group_size = group_size;
  a.replica_groups = std::move(groups);
  return a;
}
}  // namespace

Instruction* Builder::all_gather(Instruction* x, int64_t dim, int64_t group_size, std::vector<Dims> groups) {
  return add(Opcode::kAllGather, {x}, collective_attrs({dim}, group_size, std::move(groups)));
}

Instruction* Builder::reduce_scatter(Instruction* x, ReduceKind kind, int64_t dim, int64_t group_size,
                                     std::vector<Dims> groups) {
  Attrs a = collective_attrs({dim}, group_size, std::move(groups));
  a.reduce_kind = kind;
  return add(Opcode::kReduceScatter, {x}, std::move(a));
}

Instruction* Builder::all_to_all(Instruction* x, int64_t split_dim, int64_t concat_dim, int64_t group_size,
                                 std::vector<Dims> groups) {
  return add(Opcode::kAllToAll, {x}, collective_attrs({split_dim, concat_dim}, group_size, std::move(groups)));
}

Instruction* Builder::collective_permute(Instruction* x, std::vector<std::pair<int64_t, int64_t>> pairs,
                                         int64_t group_size, std::vector<Dims> groups) {
  Attrs a = collective_attrs({}, group_size, std::move(groups));
  a.source_target_pairs = std::move(pairs);
  return add(Opcode::kCollectivePermute, {x}, std::move(a));
}

Instruction* Builder::dynamic_slice(Instruction* x, std::vector<Instruction*> starts, Dims sizes) {
  Attrs a;
  a.limits = std::move(sizes);
  starts.insert(starts.begin(), x);
  return add(Opcode::kDynamicSlice, std::move(starts), std::move(a));
}

Instruction* Builder::dynamic_update_slice(Instruction* x, Instruction* update,
                                           std::vector<Instruction*> starts) {
  starts.insert(starts.begin(), {x, update});
  return add(Opcode::kDynamicUpdateSlice, std::move(starts), {});
}

Instruction* Builder::while_loop(std::vector<Instruction*> carried, Computation* condition,
                                 Computation* body, int64_t trip_count) {
  Attrs a;
  a.condition = condition;
  a.body = body;
  a.trip_count = trip_count;
  return add(Opcode::kWhile, std::move(carried), std::move(a));
}

Instruction* Builder::conditional(Instruction* selector, std::vector<Instruction*> operands,
                                  std::vector<Computation*> branches) {
  Attrs a;
  a.branches = std::move(branches);
  operands.insert(operands.begin(), selector);
  return add(Opcode::kConditional, std::move(operands), std::move(a));
}

Instruction* Builder::get_tuple_element(Instruction* tuple, int64_t index) {
  if (!is_tuple_op(tuple->opcode()))
    KILN_THROW(ShapeError, "[get_tuple_element] reads a result of a while or conditional, received ",
               opcode_name(tuple->opcode()), " ", tuple->shape(), ".");
  std::vector<Shape> results = tuple_result_shapes(*tuple);
  if (index < 0 || index >= static_cast<int64_t>(results.size()))
    KILN_THROW(ShapeError, "[get_tuple_element] index ", index, " is out of range: the ",
               opcode_name(tuple->opcode()), " has ", results.size(), " results.");
  Attrs a;
  a.tuple_index = index;
  return add(Opcode::kGetTupleElement, {tuple}, std::move(a), &results[static_cast<size_t>(index)]);
}

std::vector<Instruction*> Builder::tuple_elements(Instruction* tuple) {
  std::vector<Instruction*> out;
  const size_t n = tuple_result_shapes(*tuple).size();
  for (size_t i = 0; i < n; ++i) out.push_back(get_tuple_element(tuple, static_cast<int64_t>(i)));
  return out;
}

}  // namespace kiln::ir
