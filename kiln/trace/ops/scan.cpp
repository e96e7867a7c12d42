// scan: eagerly a plain loop; traced, one while with a known trip count whose body slices x_t
// by the counter (dynamic_slice) and writes y_t into stacked buffers (dynamic_update_slice).
// Its gradient is a reverse while: the forward loop also saves the carry entering each step
// (stacked), and each backward step recomputes that step's body from it under a tape and
// applies its VJP (a checkpointed scan: residuals are the carries, not every intermediate).
#include "kiln/trace/ops/scan.h"

#include "kiln/ir/builder.h"
#include "kiln/trace/emit.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/control_flow_impl.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/shape.h"

namespace kiln {
namespace trace {
namespace {

int64_t scan_length(const std::vector<Tensor>& xs) {
  if (xs.empty())
    KILN_THROW(ValueError, "[", where("scan"), "] needs at least one xs tensor: T is their leading dim.");
  for (const Tensor& x : xs)
    if (x.rank() < 1 || x.dim(0) < 1 || x.dim(0) != xs[0].dim(0))
      KILN_THROW(ShapeError, "[", where("scan"), "] every xs tensor needs the same leading dim T >= 1, received (",
                 str_join(shapes_of(xs), ", "), ").");
  return xs[0].dim(0);
}

Tensor i32(int64_t v) { return Tensor::scalar(static_cast<double>(v), DType::kI32); }

std::vector<Tensor> row_starts(const Tensor& i, int rank) {
  std::vector<Tensor> starts{i};
  for (int d = 1; d < rank; ++d) starts.push_back(i32(0));
  return starts;
}

// x[i] (i: an i32 scalar tensor), without the leading axis.
Tensor row(const Tensor& x, const Tensor& i) {
  Dims sizes = x.dims();
  sizes[0] = 1;
  return reshape(dynamic_slice(x, row_starts(i, x.rank()), sizes), Dims(x.dims().begin() + 1, x.dims().end()));
}

// buffer with row i replaced by v.
Tensor set_row(const Tensor& buffer, const Tensor& v, const Tensor& i) {
  Dims d = v.dims();
  d.insert(d.begin(), 1);
  return dynamic_update_slice(buffer, reshape(v, d), row_starts(i, buffer.rank()));
}

Shape stacked(const Shape& s, int64_t n) {
  Dims d = s.dims();
  d.insert(d.begin(), n);
  return s.with_dims(d);
}

std::vector<Shape> stacked_all(const std::vector<Tensor>& values, int64_t n) {
  std::vector<Shape> out;
  for (const Tensor& v : values) out.push_back(stacked(v.shape(), n));
  return out;
}

std::vector<Tensor> zeros_of(const std::vector<Shape>& shapes) {
  std::vector<Tensor> out;
  for (const Shape& s : shapes) out.push_back(zeros(s));
  return out;
}

void check_carry(const std::vector<Tensor>& carry, const std::vector<Tensor>& init) {
  if (shapes_of(carry) != shapes_of(init))
    KILN_THROW(ShapeError, "[", where("scan"), "] body returned a carry of (", str_join(shapes_of(carry), ", "),
               "), expected init's (", str_join(shapes_of(init), ", "), ").");
}

template <typename T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

template <typename T>
std::vector<T> part(const std::vector<T>& v, size_t begin, size_t count) {
  return {v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(begin + count)};
}

ScanResult eager_scan(const ScanBody& body, const std::vector<Tensor>& init, const std::vector<Tensor>& xs,
                      int64_t length, bool reverse) {
  std::vector<Tensor> carry = init;
  std::vector<std::vector<Tensor>> rows(static_cast<size_t>(length));  // rows[t][k] = y_k at t
  for (int64_t k = 0; k < length; ++k) {
    const int64_t t = reverse ? length - 1 - k : k;
    std::vector<Tensor> x_t;
    for (const Tensor& x : xs) x_t.push_back(row(x, i32(t)));
    auto [next, y] = body(carry, x_t);
    check_carry(next, init);
    carry = std::move(next);
    rows[static_cast<size_t>(t)] = std::move(y);
  }
  ScanResult out{carry, {}};
  for (size_t k = 0; k < rows[0].size(); ++k) {
    std::vector<Tensor> parts;
    for (const auto& r : rows) parts.push_back(expand_dims(r.at(k), 0));
    out.ys.push_back(concat(parts, 0));
  }
  return out;
}

// The while's condition: the counter (parameter 0) below `length`; the other parameters
// mirror the body's.
ir::Computation* counter_condition(TraceContext& ctx, const ir::Computation& body, int64_t length) {
  ir::Computation* c = ctx.module().add_computation(str_cat(body.name(), ".cond"));
  ir::Builder b(c);
  for (const ir::Instruction* p : body.parameters()) b.parameter(p->shape(), p->name());
  c->set_outputs({b.compare(ir::Comparison::kLt, c->parameter(0), b.scalar(static_cast<double>(length), DType::kI32))});
  return c;
}

// A traced loop body: its computation and, per parameter, the captured value it stands for
// (null for the loop's own values).
struct LoopBody {
  ir::Computation* computation;
  std::vector<ir::Instruction*> outer;
  std::vector<Tensor> origins;  // the tensors the user's body named, for the tape
};

// Sets the body's outputs: `next` for the loop's own parameters (in order) and each capture
// passed through unchanged.
LoopBody close_body(TraceContext& ctx, NestedComputation& nested, const std::vector<Tensor>& next) {
  ir::Computation* body = nested.computation();
  LoopBody out{body, std::vector<ir::Instruction*>(body->parameters().size(), nullptr), {}};
  std::vector<Tensor> outputs;
  std::vector<ir::Instruction*> origins;
  auto own = next.begin();
  for (const TraceContext::ValueCapture& c : ctx.captures()) {
    out.outer[static_cast<size_t>(c.parameter->attrs().parameter_index)] = c.outer;
    origins.push_back(c.origin);
  }
  for (size_t i = 0; i < out.outer.size(); ++i) {
    KILN_CHECK(out.outer[i] != nullptr || own != next.end(), "scan body has more parameters than values");
    outputs.push_back(out.outer[i] != nullptr ? ctx.wrap(body->parameter(i)) : *own++);
  }
  KILN_CHECK(own == next.end(), "scan body got more values than parameters");
  body->set_outputs(nested.lower(outputs, "scan body"));
  out.origins = wrap_all(ctx, origins);  // wrapped now: outside the body they are plain values
  return out;
}

// The while over `body` from `init` (its own values; captures are filled in) for `length`
// iterations. Returns every result, in the body's parameter order.
std::vector<Tensor> counted_while(TraceContext& ctx, const LoopBody& body, const std::vector<Tensor>& init,
                                  int64_t length) {
  ir::Computation* condition = counter_condition(ctx, *body.computation, length);
  std::vector<ir::Instruction*> operands;
  auto own = init.begin();
  for (ir::Instruction* o : body.outer) operands.push_back(o != nullptr ? o : ctx.lower(*own++, where("scan")));
  ir::Instruction* loop = ctx.builder().while_loop(operands, condition, body.computation, length);
  return wrap_all(ctx, ctx.builder().tuple_elements(loop));
}

// What the gradient of one traced scan needs: the user's body and the forward loop's values.
struct ScanTape {
  ScanBody body;
  int64_t length;
  bool reverse;
  std::vector<Tensor> init, xs, origins;  // the record's operands, in this order
  std::vector<Tensor> carry_out, ys;      // its outputs
  std::vector<Tensor> carries;            // [T, ...] the carry entering each step
};

// The reverse loop: step s redoes forward step T-1-s from its saved carry under a tape and
// pulls the cotangents back through it; x and capture cotangents accumulate in the carry.
std::vector<Tensor> scan_vjp(const ScanTape& f, const std::vector<Tensor>& gs) {
  TraceContext& ctx = *TraceContext::current();
  const size_t n = f.init.size(), m = f.xs.size(), c = f.origins.size();
  std::vector<Tensor> dcarry_in = or_zeros(part(gs, 0, n), f.carry_out);
  std::vector<Tensor> dys = or_zeros(part(gs, n, f.ys.size()), f.ys);
  LoopBody body = [&] {
    NestedComputation nested(ctx, "scan_grad");
    Tensor s = nested.parameter(Shape(DType::kI32, {}), "s");
    std::vector<Tensor> dcarry = nested.parameters(shapes_of(f.init), "dcarry");
    std::vector<Tensor> dxs = nested.parameters(shapes_of(f.xs), "dxs");
    std::vector<Tensor> dcaptures = nested.parameters(shapes_of(f.origins), "dcapture");
    std::vector<Tensor> carries = nested.parameters(shapes_of(f.carries), "carries");
    std::vector<Tensor> xs = nested.parameters(shapes_of(f.xs), "xs");
    std::vector<Tensor> dy = nested.parameters(shapes_of(dys), "dys");
    const Tensor t = f.reverse ? s : static_cast<double>(f.length - 1) - s;  // the row forward step T-1-s read
    std::vector<Tensor> carry_t, x_t, dy_t;
    for (const Tensor& h : carries) carry_t.push_back(row(h, t));
    for (const Tensor& x : xs) x_t.push_back(row(x, t));
    for (const Tensor& d : dy) dy_t.push_back(row(d, t));
    std::vector<Tensor> targets, seeds = dcarry;
    std::vector<GradientSource> sources(carry_t.begin(), carry_t.end());
    sources.insert(sources.end(), x_t.begin(), x_t.end());
    sources.insert(sources.end(), f.origins.begin(), f.origins.end());
    std::vector<Tensor> grads;
    {
      GradientTape tape;
      auto [next, y] = f.body(carry_t, x_t);
      targets = next;
      append(targets, y);
      append(seeds, dy_t);
      grads = tape.gradient(targets, seeds, sources);
    }
    std::vector<Tensor> out{s + 1.0};
    append(out, part(grads, 0, n));
    for (size_t j = 0; j < m; ++j) out.push_back(set_row(dxs[j], grads[n + j], t));
    for (size_t k = 0; k < c; ++k) out.push_back(dcaptures[k] + grads[n + m + k]);
    append(out, carries);
    append(out, xs);
    append(out, dy);
    return close_body(ctx, nested, out);
  }();
  std::vector<Tensor> init{i32(0)};
  append(init, dcarry_in);
  append(init, zeros_of(shapes_of(f.xs)));
  append(init, zeros_of(shapes_of(f.origins)));
  append(init, f.carries);
  append(init, f.xs);
  append(init, dys);
  std::vector<Tensor> results = counted_while(ctx, body, init, f.length);
  std::vector<Tensor> grads = part(results, 1, n + m + c);
  // A gradient of this gradient would need the VJP of the reverse loop: say so if asked.
  std::vector<Tensor> operands = part(init, 1, init.size() - 1);
  append(operands, body.origins);
  record_composite_on_tapes("the gradient of scan", operands, grads, nullptr);
  return grads;
}

ScanResult traced_scan(TraceContext& ctx, const ScanBody& user_body, const std::vector<Tensor>& init,
                       const std::vector<Tensor>& xs, int64_t length, bool reverse) {
  const size_t n = init.size();
  const bool save_carries = tapes_recording();
  size_t ny = 0, first_buffer = 0;
  LoopBody body = [&] {
    NestedComputation nested(ctx, "scan");
    Tensor step = nested.parameter(Shape(DType::kI32, {}), "t");
    std::vector<Tensor> carry = nested.parameters(shapes_of(init), "carry");
    std::vector<Tensor> xp = nested.parameters(shapes_of(xs), "xs");
    const Tensor t = reverse ? static_cast<double>(length - 1) - step : step;
    std::vector<Tensor> x_t;
    for (const Tensor& x : xp) x_t.push_back(row(x, t));
    auto [next, y] = user_body(carry, x_t);
    check_carry(next, init);
    nested.lower(next, "scan carry");  // settle the captures before the buffers' parameters
    nested.lower(y, "scan y");
    first_buffer = nested.computation()->parameters().size();
    std::vector<Tensor> out{step + 1.0};
    append(out, next);
    append(out, xp);
    std::vector<Tensor> buffers;
    for (const Shape& s : stacked_all(y, length)) buffers.push_back(nested.parameter(s, "ys"));
    if (save_carries)
      for (const Shape& s : stacked_all(init, length)) buffers.push_back(nested.parameter(s, "carries"));
    ny = y.size();
    for (size_t k = 0; k < ny; ++k) out.push_back(set_row(buffers[k], y[k], t));
    if (save_carries)
      for (size_t i = 0; i < n; ++i) out.push_back(set_row(buffers[ny + i], carry[i], t));
    return close_body(ctx, nested, out);
  }();
  std::vector<Tensor> start{i32(0)};
  append(start, init);
  append(start, xs);
  for (size_t i = first_buffer; i < body.outer.size(); ++i) start.push_back(zeros(body.computation->parameter(i)->shape()));
  std::vector<Tensor> results = counted_while(ctx, body, start, length);
  ScanTape f{user_body, length, reverse, init, xs, body.origins, part(results, 1, n),
             part(results, first_buffer, ny), part(results, first_buffer + ny, save_carries ? n : 0)};
  if (save_carries) {
    std::vector<Tensor> operands = init, outputs = f.carry_out;
    append(operands, xs);
    append(operands, body.origins);
    append(outputs, f.ys);
    record_composite_on_tapes("scan", operands, outputs,
                              [f](const std::vector<Tensor>& gs, const std::vector<bool>&) { return scan_vjp(f, gs); });
  }
  return {f.carry_out, f.ys};
}

}  // namespace
}  // namespace trace

ScanResult scan(const ScanBody& body, const std::vector<Tensor>& init, const std::vector<Tensor>& xs, bool reverse) {
  const int64_t length = trace::scan_length(xs);
  trace::TraceContext* ctx = trace::TraceContext::current();
  if (ctx == nullptr) return trace::eager_scan(body, init, xs, length, reverse);
  return trace::traced_scan(*ctx, body, init, xs, length, reverse);
}

}  // namespace kiln
