// Builder: checked construction of instructions in one Computation. Every method infers and
// checks the result shape (shape_inference.h) and tags the instruction with the current source.
#pragma once

#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/ir/computation.h"

namespace kiln::ir {

class Builder {
 public:
  explicit Builder(Computation* computation) : computation_(computation) {}

  Computation* computation() const { return computation_; }
  /// Tags every instruction made from now on (a layer name or call site, for errors).
  void set_source(std::string source) { source_ = std::move(source); }
  const std::string& source() const { return source_; }

  Instruction* parameter(Shape shape, std::string name);
  Instruction* constant(HostTensor value);
  /// A scalar constant of `dtype` holding `value`.
  Instruction* scalar(double value, DType dtype);
  /// A constant of `shape` with every element `value` (a broadcast scalar).
  Instruction* full(const Shape& shape, double value);
  Instruction* iota(Shape shape, int64_t axis);

  Instruction* unary(Opcode op, Instruction* x);
  Instruction* convert(Instruction* x, DType dtype);
  Instruction* binary(Opcode op, Instruction* lhs, Instruction* rhs);
  Instruction* compare(Comparison direction, Instruction* lhs, Instruction* rhs);
  Instruction* select(Instruction* predicate, Instruction* on_true, Instruction* on_false);

  /// Operand dim i becomes result dim broadcast_dims[i]; other result dims are new.
  Instruction* broadcast_in_dim(Instruction* x, Dims result_dims, Dims broadcast_dims);
  Instruction* reshape(Instruction* x, Dims dims);
  Instruction* transpose(Instruction* x, Dims permutation);
  Instruction* slice(Instruction* x, Dims starts, Dims limits, Dims strides);
  Instruction* concatenate(std::vector<Instruction*> xs, int64_t axis);
  Instruction* pad(Instruction* x, Dims low, Dims high, double value);

  /// Rows of `operand` along `axis` picked by `indices` (out-of-range indices clamp).
  Instruction* gather(Instruction* operand, Instruction* indices, int64_t axis);
  /// `operand` plus `updates` added at `indices` along `axis` (the gradient of gather).
  Instruction* scatter_add(Instruction* operand, Instruction* indices, Instruction* updates, int64_t axis);

  /// The box of `sizes` of `x` starting at the scalar `starts` (clamped so the box fits).
  Instruction* dynamic_slice(Instruction* x, std::vector<Instruction*> starts, Dims sizes);
  /// `x` with `update` written at the scalar `starts` (clamped so the update fits).
  Instruction* dynamic_update_slice(Instruction* x, Instruction* update, std::vector<Instruction*> starts);

  /// kReduceSum, kReduceMax or kReduceMin over sorted `axes` (which disappear).
  Instruction* reduce(Opcode op, Instruction* x, Dims axes);
  /// Index (i32) of the first maximum along `axis`, which disappears.
  Instruction* argmax(Instruction* x, int64_t axis);

  Instruction* dot_general(Instruction* lhs, Instruction* rhs, DotDims dims);
  /// x: (N,H,W,C), w: (KH,KW,C/groups,F) -> (N,OH,OW,F).
  Instruction* convolution(Instruction* x, Instruction* w, ConvDims dims);
  Instruction* conv_backward_input(Instruction* dy, Instruction* w, const Shape& x_shape, ConvDims dims);
  Instruction* conv_backward_filter(Instruction* x, Instruction* dy, const Shape& w_shape, ConvDims dims);
  Instruction* reduce_window(Instruction* x, ReduceKind kind, Window window);
  Instruction* reduce_window_grad(Instruction* x, Instruction* dy, ReduceKind kind, Window window);

  /// Uniform random i32 bits of `dims` from a counter-based generator keyed by `key` (i64[]).
  Instruction* rng_bits(Instruction* key, Dims dims);
  /// The collectives (XLA's), over groups of `group_size` replicas: `groups` lists the
  /// replica ids of each, empty means every replica in one group (see attrs.h).
  Instruction* all_reduce(Instruction* x, ReduceKind kind, std::vector<Dims> groups = {});
  /// Every replica's x of its group concatenated along `dim`, in group order.
  Instruction* all_gather(Instruction* x, int64_t dim, int64_t group_size, std::vector<Dims> groups = {});
  /// The sum (mean) over the group, of which the replica at position p keeps part p along `dim`.
  Instruction* reduce_scatter(Instruction* x, ReduceKind kind, int64_t dim, int64_t group_size,
                              std::vector<Dims> groups = {});
  /// x split along `split_dim` into group_size parts, part i sent to the group's replica i;
  /// the parts received concatenated along `concat_dim` in group order.
  Instruction* all_to_all(Instruction* x, int64_t split_dim, int64_t concat_dim, int64_t group_size,
                          std::vector<Dims> groups = {});
  /// x sent from each pair's source to its target (positions in a group); zeros where none arrives.
  Instruction* collective_permute(Instruction* x, std::vector<std::pair<int64_t, int64_t>> pairs, int64_t group_size,
                                  std::vector<Dims> groups = {});

  /// Runs `body` while `condition` holds over `carried` (both take the carried values; the
  /// body returns their next values). `trip_count`: iterations when known, else -1. Read the
  /// results with get_tuple_element (or tuple_elements).
  Instruction* while_loop(std::vector<Instruction*> carried, Computation* condition, Computation* body,
                          int64_t trip_count = -1);
  /// Runs branches[selector] (i32; out of range picks the last) or, for a bool selector,
  /// branches {true, false}, on `operands`.
  Instruction* conditional(Instruction* selector, std::vector<Instruction*> operands,
                           std::vector<Computation*> branches);
  /// Result `index` of a while or conditional.
  Instruction* get_tuple_element(Instruction* tuple, int64_t index);
  /// Every result of a while or conditional, in order.
  std::vector<Instruction*> tuple_elements(Instruction* tuple);

  /// Adds an instruction after checking it with infer_shape; the general entry point.
  Instruction* add(Opcode op, std::vector<Instruction*> operands, Attrs attrs,
                   const Shape* declared = nullptr);

 private:
  Computation* computation_;
  std::string source_;
};

}  // namespace kiln::ir
