// Tape recording and the reverse sweep: relevance (ops between the sources and the target),
// then cotangent propagation through the VJP tables, accumulating with add.
#include "kiln/trace/gradient_tape.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "kiln/trace/emit.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/trace_context.h"
#include "kiln/trace/vjp/vjp.h"

namespace kiln {

struct GradientTape::Impl {
  // An op (one output), or a composite (name, several outputs and its own VJP).
  struct Record {
    ir::Opcode op;
    ir::Attrs attrs;
    std::vector<Tensor> operands;
    Tensor output;
    std::vector<Tensor> outputs;  // composite only
    std::string composite;        // composite only: its name
    trace::CompositeVjp composite_vjp;
    bool is_composite() const { return !composite.empty(); }
    std::vector<Tensor> all_outputs() const { return is_composite() ? outputs : std::vector<Tensor>{output}; }
  };
  const trace::TraceContext* context = nullptr;  // nullptr: an eager tape
  size_t depth = 0;  // the nested computation (while body, branch) it records in
  bool recording = true;
  std::vector<Record> records;
  std::vector<std::pair<const trace::VariableState*, Tensor>> reads;
};

namespace trace {
namespace {

thread_local std::vector<GradientTape::Impl*> t_tapes;
thread_local int t_paused = 0;

// The identity of a value: its instruction in a trace, its node eagerly (copies of a handle
// share the node; two reads of one variable in a trace share the parameter).
const void* key(const Tensor& t) {
  return t.node()->instruction != nullptr ? static_cast<const void*>(t.node()->instruction)
                                          : static_cast<const void*>(t.node().get());
}

bool differentiable(const Tensor& t) { return t.defined() && is_floating(t.dtype()); }

// Ops are recorded by the tapes of the computation they are made in. A variable read inside a
// loop body also goes to the tapes outside it (`enclosing_too`): the value read is then an
// enclosing computation's (the variable's parameter), which the loop captures.
template <typename Fn>
void for_recording_tapes(Fn&& fn, bool enclosing_too = false) {
  if (t_paused > 0 || t_tapes.empty()) return;
  const TraceContext* ctx = TraceContext::current();
  const size_t depth = ctx != nullptr ? ctx->depth() : 0;
  for (GradientTape::Impl* tape : t_tapes)
    if (tape->recording && tape->context == ctx && (tape->depth == depth || (enclosing_too && tape->depth < depth)))
      fn(*tape);
}

// Runs a composite record's VJP: every output's cotangent (zeros where none flowed) in, one
// cotangent per needed operand out.
template <typename Accumulate>
void apply_composite_vjp(const GradientTape::Impl::Record& r, const std::vector<bool>& needs,
                         const std::unordered_map<const void*, Tensor>& cotangents, Accumulate&& accumulate) {
  std::vector<Tensor> gs;
  bool any = false;
  for (const Tensor& o : r.outputs) {
    auto it = cotangents.find(key(o));
    any = any || it != cotangents.end();
    gs.push_back(it != cotangents.end() ? it->second : Tensor());
  }
  if (!any) return;
  if (!r.composite_vjp)
    KILN_THROW(CompileError, "[GradientTape::gradient] cannot differentiate through ", r.composite,
               ": it has no VJP (only loops with a known trip count, such as scan, have one). "
               "Hint: write the loop with kiln::scan, or apply stop_gradient() to its inputs.");
  for (size_t k = 0; k < gs.size(); ++k)
    if (!gs[k].defined() && differentiable(r.outputs[k])) gs[k] = zeros_like(r.outputs[k]);
  std::vector<Tensor> grads = r.composite_vjp(gs, needs);
  KILN_CHECK(grads.size() == r.operands.size(), "VJP of ", r.composite, " returned ", grads.size(),
             " cotangents for ", r.operands.size(), " operands");
  for (size_t j = 0; j < grads.size(); ++j) {
    if (!needs[j] || !grads[j].defined()) continue;
    KILN_CHECK(grads[j].shape() == r.operands[j].shape(), "VJP of ", r.composite, " gave ", grads[j].shape(),
               " for operand ", j, " of shape ", r.operands[j].shape());
    accumulate(r.operands[j], grads[j]);
  }
}

}  // namespace

PauseTapes::PauseTapes() { ++t_paused; }
PauseTapes::~PauseTapes() { --t_paused; }

void record_on_tapes(ir::Opcode op, const ir::Attrs& attrs, const std::vector<Tensor>& operands,
                     const Tensor& output) {
  if (!differentiable(output)) return;  // integer and bool results carry no gradient
  for_recording_tapes([&](GradientTape::Impl& tape) {
    tape.records.push_back({op, attrs, operands, output, {}, {}, nullptr});
  });
}

void record_composite_on_tapes(std::string name, const std::vector<Tensor>& operands,
                               const std::vector<Tensor>& outputs, CompositeVjp vjp) {
  for_recording_tapes([&](GradientTape::Impl& tape) {
    tape.records.push_back({ir::Opcode::kWhile, {}, operands, Tensor(), outputs, name, vjp});
  });
}

bool tapes_recording() {
  bool any = false;
  for_recording_tapes([&](GradientTape::Impl&) { any = true; });
  return any;
}

void record_variable_read(const std::shared_ptr<VariableState>& variable, const Tensor& value) {
  for_recording_tapes([&](GradientTape::Impl& tape) { tape.reads.emplace_back(variable.get(), value); },
                      /*enclosing_too=*/true);
}

const VjpEntry* find_vjp_entry(ir::Opcode op) {
  for (auto table : {elementwise_vjps(), shape_vjps(), reduce_vjps(), contraction_vjps(), collective_vjps()})
    for (const VjpEntry& e : table)
      if (e.op == op) return &e;
  return nullptr;
}

VjpRule find_vjp(ir::Opcode op) {
  const VjpEntry* e = find_vjp_entry(op);
  return e != nullptr ? e->rule : nullptr;
}

}  // namespace trace

GradientTape::GradientTape() : impl_(std::make_unique<Impl>()) {
  impl_->context = trace::TraceContext::current();
  if (impl_->context != nullptr) impl_->depth = impl_->context->depth();
  trace::t_tapes.push_back(impl_.get());
}

GradientTape::~GradientTape() {
  auto& tapes = trace::t_tapes;
  tapes.erase(std::find(tapes.begin(), tapes.end(), impl_.get()));
}

size_t GradientTape::recorded_ops() const { return impl_->records.size(); }

std::vector<Tensor> GradientTape::gradient(const Tensor& target,
                                           std::initializer_list<GradientSource> sources) {
  return gradient_impl(target, std::vector<GradientSource>(sources));
}

Tensor GradientTape::gradient(const Tensor& target, const GradientSource& source) {
  return gradient_impl(target, {source})[0];
}

std::vector<Tensor> GradientTape::gradient(const std::vector<Tensor>& targets,
                                           const std::vector<Tensor>& output_gradients,
                                           const std::vector<GradientSource>& sources) {
  if (targets.size() != output_gradients.size())
    KILN_THROW(ValueError, "[GradientTape::gradient] expected one output gradient per target (", targets.size(),
               "), received ", output_gradients.size(), ".");
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i].defined() && output_gradients[i].defined() && !(targets[i].shape() == output_gradients[i].shape()))
      KILN_THROW(ShapeError, "[GradientTape::gradient] output gradient ", i, " must be ", targets[i].shape(),
                 " like its target, received ", output_gradients[i].shape(), ".");
  return vjp_impl(targets, output_gradients, sources);
}

std::vector<Tensor> GradientTape::gradient_impl(const Tensor& target,
                                                const std::vector<GradientSource>& sources) {
  if (!target.defined() || !is_floating(target.dtype()))
    KILN_THROW(DTypeError, "[GradientTape::gradient] the target must be a floating-point tensor, "
               "received ", target.defined() ? target.shape().to_string() : "an undefined tensor", ".");
  return vjp_impl({target}, {ones_like(target)}, sources);
}

std::vector<Tensor> GradientTape::vjp_impl(const std::vector<Tensor>& targets, const std::vector<Tensor>& seeds,
                                           const std::vector<GradientSource>& sources) {
  using trace::key;
  if (trace::TraceContext::current() != impl_->context)
    KILN_THROW(ValueError, "[GradientTape::gradient] called ",
               impl_->context ? "outside the trace the tape was started in"
                              : "inside a trace on an eager tape",
               ". Hint: create the tape inside the kiln::function that computes the target.");
  // The keys each source stands for: a tensor's own, or every value a variable was read as.
  std::vector<std::vector<const void*>> source_keys(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].variable.defined()) {
      for (const auto& [state, value] : impl_->reads)
        if (state == sources[i].variable.state().get()) source_keys[i].push_back(key(value));
      std::sort(source_keys[i].begin(), source_keys[i].end());
      source_keys[i].erase(std::unique(source_keys[i].begin(), source_keys[i].end()),
                           source_keys[i].end());
    } else {
      KILN_CHECK(sources[i].tensor.defined(), "undefined gradient source ", i);
      source_keys[i].push_back(key(sources[i].tensor));
    }
  }

  const std::vector<Impl::Record>& records = impl_->records;
  // Ops the target depends on (backwards), then those that also depend on a source (forwards).
  std::vector<bool> active(records.size(), false);
  std::unordered_set<const void*> needed;
  for (size_t i = 0; i < targets.size(); ++i)
    if (trace::differentiable(targets[i]) && seeds[i].defined()) needed.insert(key(targets[i]));
  for (size_t i = records.size(); i-- > 0;) {
    const std::vector<Tensor> outs = records[i].all_outputs();
    if (std::none_of(outs.begin(), outs.end(), [&](const Tensor& o) { return needed.count(key(o)) > 0; }))
      continue;
    active[i] = true;
    for (const Tensor& op : records[i].operands)
      if (trace::differentiable(op)) needed.insert(key(op));
  }
  std::unordered_set<const void*> influenced;
  for (const auto& keys : source_keys) influenced.insert(keys.begin(), keys.end());
  for (size_t i = 0; i < records.size(); ++i) {
    if (!active[i]) continue;
    active[i] = std::any_of(records[i].operands.begin(), records[i].operands.end(),
                            [&](const Tensor& op) { return influenced.count(key(op)) > 0; });
    if (active[i])
      for (const Tensor& o : records[i].all_outputs()) influenced.insert(key(o));
  }

  // The sweep records nothing on this tape (other tapes may record it: higher order).
  impl_->recording = false;
  struct Resume {
    Impl* impl;
    ~Resume() { impl->recording = true; }
  } resume{impl_.get()};

  std::unordered_map<const void*, Tensor> cotangents;
  auto accumulate = [&](const Tensor& value, const Tensor& g) {
    auto [slot, fresh] = cotangents.try_emplace(key(value), g);
    if (!fresh) slot->second = slot->second + g;
  };
  for (size_t i = 0; i < targets.size(); ++i)
    if (trace::differentiable(targets[i]) && seeds[i].defined()) accumulate(targets[i], seeds[i]);
  for (size_t i = records.size(); i-- > 0;) {
    if (!active[i]) continue;
    const Impl::Record& r = records[i];
    std::vector<bool> needs;
    for (const Tensor& op : r.operands)
      needs.push_back(trace::differentiable(op) && influenced.count(key(op)) > 0);
    if (r.is_composite()) {
      trace::apply_composite_vjp(r, needs, cotangents, accumulate);
      continue;
    }
    auto it = cotangents.find(key(r.output));
    if (it == cotangents.end()) continue;
    const trace::VjpEntry* entry = trace::find_vjp_entry(r.op);
    if (entry == nullptr)  // a missing row would silently give zeros: say so instead
      KILN_THROW(CompileError, "[GradientTape::gradient] cannot differentiate through ",
                 ir::opcode_name(r.op), " (result ", r.output.shape(), "): it has no VJP rule. "
                 "Hint: add a row for it to the tables of kiln/trace/vjp/, or apply "
                 "stop_gradient() to its operands if no gradient should flow through it.");
    trace::VjpRule rule = entry->rule;
    if (rule == nullptr) continue;  // listed as non-differentiable: the gradient stops here
    Tensor g = it->second;
    trace::Grads grads = rule({r.op, r.attrs, r.operands, r.output, g, needs});
    KILN_CHECK(grads.size() == r.operands.size(), "VJP of ", r.op, " returned ", grads.size(),
               " cotangents for ", r.operands.size(), " operands");
    for (size_t j = 0; j < grads.size(); ++j) {
      if (!needs[j] || !grads[j].defined()) continue;
      const Tensor& op = r.operands[j];
      KILN_CHECK(grads[j].shape() == op.shape(), "VJP of ", r.op, " gave ", grads[j].shape(),
                 " for operand ", j, " of shape ", op.shape());
      accumulate(op, grads[j]);
    }
  }

  std::vector<Tensor> out;
  for (size_t i = 0; i < sources.size(); ++i) {
    Tensor sum;
    for (const void* k : source_keys[i]) {
      auto it = cotangents.find(k);
      if (it == cotangents.end()) continue;
      sum = sum.defined() ? sum + it->second : it->second;
    }
    if (!sum.defined()) {
      const Shape& s = sources[i].variable.defined() ? sources[i].variable.shape()
                                                     : sources[i].tensor.shape();
      sum = zeros(s);
    }
    out.push_back(sum);
  }
  return out;
}

Tensor stop_gradient(const Tensor& x) {
  if (!x.is_symbolic()) return Tensor(x.value());  // a new handle no tape has seen
  // A same-shape reshape gives the value a new identity; the simplifier removes it.
  trace::PauseTapes pause;
  Shape s = x.shape();
  return trace::emit(ir::Opcode::kReshape, {x}, {}, &s);
}

}  // namespace kiln
