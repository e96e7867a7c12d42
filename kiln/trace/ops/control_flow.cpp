// while_loop, cond and switch_case: traced as while/conditional instructions over nested
// computations (with the values they capture as extra operands), or run eagerly.
#include "kiln/trace/ops/control_flow.h"

#include "kiln/ir/shape_inference.h"
#include "kiln/trace/emit.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/control_flow_impl.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln {
namespace trace {

NestedComputation::NestedComputation(TraceContext& ctx, const std::string& name)
    : ctx_(ctx),
      computation_(ctx.module().add_computation(str_cat(name, ".", ctx.module().computations().size()))) {
  ctx.push_computation(computation_);
}

Tensor NestedComputation::parameter(const Shape& shape, const std::string& name) {
  return ctx_.wrap(computation_->add_parameter(shape, name));
}

std::vector<Tensor> NestedComputation::parameters(const std::vector<Shape>& shapes, const std::string& name) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < shapes.size(); ++i) out.push_back(parameter(shapes[i], str_cat(name, i)));
  return out;
}

std::vector<ir::Instruction*> NestedComputation::lower(const std::vector<Tensor>& values, const std::string& where) {
  std::vector<ir::Instruction*> out;
  for (const Tensor& v : values) out.push_back(ctx_.lower(v, where));
  return out;
}

TracedComputations trace_computations(TraceContext& ctx, const std::string& name, const std::vector<Shape>& shapes,
                                      const std::vector<BranchFn>& fns) {
  TracedComputations out;
  std::vector<ir::Instruction*> origins;
  for (const BranchFn& fn : fns) {
    NestedComputation nested(ctx, name);
    std::vector<Tensor> params = nested.parameters(shapes, "arg");
    for (ir::Instruction* o : out.outer) ctx.capture_value(o);  // the earlier ones' captures first
    std::vector<Tensor> results = fn(params);
    out.results.push_back(nested.lower(results, str_cat(name, " result")));
    out.computations.push_back(nested.computation());
    out.outer.clear();
    origins.clear();
    for (const TraceContext::ValueCapture& c : ctx.captures()) {
      out.outer.push_back(c.outer);
      origins.push_back(c.origin);
    }
  }
  // Earlier computations also take the captures found after them (and leave them unused).
  for (ir::Computation* c : out.computations)
    for (size_t i = c->parameters().size() - shapes.size(); i < out.outer.size(); ++i)
      c->add_parameter(out.outer[i]->shape(), str_cat("capture.", out.outer[i]->id()));
  out.origins = wrap_all(ctx, origins);
  return out;
}

std::vector<Shape> shapes_of(const std::vector<Tensor>& values) {
  std::vector<Shape> out;
  for (const Tensor& v : values) out.push_back(v.shape());
  return out;
}

std::vector<Tensor> wrap_all(const TraceContext& ctx, const std::vector<ir::Instruction*>& instructions) {
  std::vector<Tensor> out;
  for (ir::Instruction* i : instructions) out.push_back(ctx.wrap(i));
  return out;
}

std::vector<Tensor> or_zeros(const std::vector<Tensor>& values, const std::vector<Tensor>& like) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < values.size(); ++i) out.push_back(values[i].defined() ? values[i] : zeros_like(like[i]));
  return out;
}

namespace {

TraceContext* tracing(const std::vector<Tensor>& values) {
  TraceContext* ctx = TraceContext::current();
  if (ctx == nullptr)
    for (const Tensor& v : values)
      if (v.defined() && v.is_symbolic())
        KILN_THROW(ValueError, "[", where("control flow"), "] received a symbolic ", v.shape(),
                   " tensor outside the trace that made it.");
  return ctx;
}

void check_results(const char* op, const std::vector<Tensor>& results, const std::vector<Shape>& expected,
                   const char* what) {
  if (shapes_of(results) != expected)
    KILN_THROW(ShapeError, "[", where(op), "] ", what, " returned (", str_join(shapes_of(results), ", "),
               "), expected (", str_join(expected, ", "), ").");
}

bool scalar_true(const Tensor& t, const char* op, const char* what) {
  if (!(t.shape() == Shape(DType::kBool, {})))
    KILN_THROW(ShapeError, "[", where(op), "] ", what, " must be a bool scalar, received ", t.shape(), ".");
  return t.value().data<bool>()[0];
}

// The conditional over traced branches, its results, and its record on the tapes: the VJP is
// a conditional over the branches' VJPs (each re-traced under a tape with the cotangents).
std::vector<Tensor> traced_conditional(TraceContext& ctx, const Tensor& selector, const std::vector<BranchFn>& fns,
                                       const std::vector<Tensor>& operands) {
  TracedComputations t = trace_computations(ctx, "branch", shapes_of(operands), fns);
  for (size_t k = 0; k < fns.size(); ++k) t.computations[k]->set_outputs(t.results[k]);
  std::vector<ir::Instruction*> ins{ctx.lower(selector, where("cond"))};
  for (const Tensor& o : operands) ins.push_back(ctx.lower(o, where("cond")));
  ins.insert(ins.end(), t.outer.begin(), t.outer.end());
  ir::Instruction* c = ctx.builder().conditional(ins[0], {ins.begin() + 1, ins.end()}, t.computations);
  std::vector<Tensor> results = wrap_all(ctx, ctx.builder().tuple_elements(c));

  std::vector<Tensor> inputs = operands;  // what the gradient flows to: operands, then captures
  inputs.insert(inputs.end(), t.origins.begin(), t.origins.end());
  std::vector<Tensor> record_operands{selector};
  record_operands.insert(record_operands.end(), inputs.begin(), inputs.end());
  record_composite_on_tapes(
      "cond", record_operands, results,
      [selector, fns, inputs, operands, results](const std::vector<Tensor>& gs, const std::vector<bool>&) {
        const size_t n = operands.size();
        std::vector<BranchFn> vjps;
        for (const BranchFn& fn : fns)
          vjps.push_back([fn, inputs, n](const std::vector<Tensor>& args) {
            std::vector<Tensor> ops(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(n));
            std::vector<Tensor> cots(args.begin() + static_cast<std::ptrdiff_t>(n), args.end());
            std::vector<GradientSource> sources(ops.begin(), ops.end());
            sources.insert(sources.end(), inputs.begin() + static_cast<std::ptrdiff_t>(n), inputs.end());
            GradientTape tape;
            std::vector<Tensor> outs = fn(ops);
            return tape.gradient(outs, cots, sources);
          });
        std::vector<Tensor> args = operands;
        std::vector<Tensor> cots = or_zeros(gs, results);
        args.insert(args.end(), cots.begin(), cots.end());
        std::vector<Tensor> grads = selector.dtype() == DType::kBool ? cond(selector, vjps[0], vjps[1], args)
                                                                     : switch_case(selector, vjps, args);
        grads.insert(grads.begin(), Tensor());  // the selector gets none
        return grads;
      });
  return results;
}

}  // namespace
}  // namespace trace

std::vector<Tensor> while_loop(const ConditionFn& cond_fn, const BranchFn& body_fn, const std::vector<Tensor>& init) {
  using namespace trace;
  if (init.empty()) KILN_THROW(ValueError, "[", where("while_loop"), "] needs at least one loop value.");
  const std::vector<Shape> shapes = shapes_of(init);
  TraceContext* ctx = tracing(init);
  if (ctx == nullptr) {
    std::vector<Tensor> values = init;
    while (scalar_true(cond_fn(values), "while_loop", "cond_fn's result")) {
      values = body_fn(values);
      check_results("while_loop", values, shapes, "body_fn");
    }
    return values;
  }
  TracedComputations t = trace_computations(
      *ctx, "while", shapes,
      {[&](const std::vector<Tensor>& v) { return std::vector<Tensor>{cond_fn(v)}; }, body_fn});
  ir::Computation* condition = t.computations[0];
  ir::Computation* body = t.computations[1];
  if (!(t.results[0][0]->shape() == Shape(DType::kBool, {})))
    KILN_THROW(ShapeError, "[", where("while_loop"), "] cond_fn must return a bool scalar, returned ",
               t.results[0][0]->shape(), ".");
  std::vector<Shape> body_shapes;
  for (ir::Instruction* r : t.results[1]) body_shapes.push_back(r->shape());
  if (body_shapes != shapes)
    KILN_THROW(ShapeError, "[", where("while_loop"), "] body_fn returned (", str_join(body_shapes, ", "),
               "), expected the loop values' shapes (", str_join(shapes, ", "), ").");
  condition->set_outputs(t.results[0]);
  std::vector<ir::Instruction*> body_out = t.results[1];
  for (size_t i = 0; i < t.outer.size(); ++i) body_out.push_back(body->parameter(shapes.size() + i));
  body->set_outputs(body_out);
  std::vector<ir::Instruction*> operands;
  for (const Tensor& v : init) operands.push_back(ctx->lower(v, where("while_loop")));
  operands.insert(operands.end(), t.outer.begin(), t.outer.end());
  ir::Instruction* loop = ctx->builder().while_loop(operands, condition, body);
  std::vector<ir::Instruction*> all = ctx->builder().tuple_elements(loop);
  std::vector<Tensor> results = wrap_all(*ctx, {all.begin(), all.begin() + static_cast<std::ptrdiff_t>(init.size())});
  std::vector<Tensor> inputs = init;
  inputs.insert(inputs.end(), t.origins.begin(), t.origins.end());
  record_composite_on_tapes("while_loop", inputs, results, nullptr);
  return results;
}

std::vector<Tensor> cond(const Tensor& pred, const BranchFn& true_fn, const BranchFn& false_fn,
                         const std::vector<Tensor>& operands) {
  using namespace trace;
  if (!(pred.shape() == Shape(DType::kBool, {})))
    KILN_THROW(ShapeError, "[", where("cond"), "] pred must be a bool scalar, received ", pred.shape(), ".");
  std::vector<Tensor> all = operands;
  all.push_back(pred);
  TraceContext* ctx = tracing(all);
  if (ctx == nullptr) return scalar_true(pred, "cond", "pred") ? true_fn(operands) : false_fn(operands);
  return traced_conditional(*ctx, pred, {true_fn, false_fn}, operands);
}

std::vector<Tensor> switch_case(const Tensor& index, const std::vector<BranchFn>& branches,
                                const std::vector<Tensor>& operands) {
  using namespace trace;
  if (!(index.shape() == Shape(DType::kI32, {})))
    KILN_THROW(ShapeError, "[", where("switch_case"), "] index must be an i32 scalar, received ", index.shape(), ".");
  if (branches.empty()) KILN_THROW(ValueError, "[", where("switch_case"), "] needs at least one branch.");
  std::vector<Tensor> all = operands;
  all.push_back(index);
  TraceContext* ctx = tracing(all);
  if (ctx == nullptr) {
    const int64_t i = index.value().to_vector<int64_t>()[0];
    const size_t n = branches.size();
    return branches[i < 0 || i >= static_cast<int64_t>(n) ? n - 1 : static_cast<size_t>(i)](operands);
  }
  return traced_conditional(*ctx, index, branches, operands);
}

}  // namespace kiln
