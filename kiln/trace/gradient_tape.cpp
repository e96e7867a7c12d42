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
  struct Record {
    ir::Opcode op;
    ir::Attrs attrs;
    std::vector<Tensor> operands;
    Tensor output;
  };
  const trace::TraceContext* context = nullptr;  // nullptr: an eager tape
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

template <typename Fn>
void for_recording_tapes(Fn&& fn) {
  if (t_paused > 0 || t_tapes.empty()) return;
  const TraceContext* ctx = TraceContext::current();
  for (GradientTape::Impl* tape : t_tapes)
    if (tape->recording && tape->context == ctx) fn(*tape);
}

}  // namespace

PauseTapes::PauseTapes() { ++t_paused; }
PauseTapes::~PauseTapes() { --t_paused; }

void record_on_tapes(ir::Opcode op, const ir::Attrs& attrs, const std::vector<Tensor>& operands,
                     const Tensor& output) {
  if (!differentiable(output)) return;  // integer and bool results carry no gradient
  for_recording_tapes([&](GradientTape::Impl& tape) {
    tape.records.push_back({op, attrs, operands, output});
  });
}

void record_variable_read(const std::shared_ptr<VariableState>& variable, const Tensor& value) {
  for_recording_tapes([&](GradientTape::Impl& tape) { tape.reads.emplace_back(variable.get(), value); });
}

const VjpEntry* find_vjp_entry(ir::Opcode op) {
  for (auto table : {elementwise_vjps(), shape_vjps(), reduce_vjps(), contraction_vjps()})
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

std::vector<Tensor> GradientTape::gradient_impl(const Tensor& target,
                                                const std::vector<GradientSource>& sources) {
  using trace::key;
  if (!target.defined() || !is_floating(target.dtype()))
    KILN_THROW(DTypeError, "[GradientTape::gradient] the target must be a floating-point tensor, "
               "received ", target.defined() ? target.shape().to_string() : "an undefined tensor", ".");
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
  std::unordered_set<const void*> needed{key(target)};
  for (size_t i = records.size(); i-- > 0;) {
    if (!needed.count(key(records[i].output))) continue;
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
    if (active[i]) influenced.insert(key(records[i].output));
  }

  // The sweep records nothing on this tape (other tapes may record it: higher order).
  impl_->recording = false;
  struct Resume {
    Impl* impl;
    ~Resume() { impl->recording = true; }
  } resume{impl_.get()};

  std::unordered_map<const void*, Tensor> cotangents;
  cotangents[key(target)] = ones_like(target);
  for (size_t i = records.size(); i-- > 0;) {
    if (!active[i]) continue;
    const Impl::Record& r = records[i];
    auto it = cotangents.find(key(r.output));
    if (it == cotangents.end()) continue;
    std::vector<bool> needs;
    for (const Tensor& op : r.operands)
      needs.push_back(trace::differentiable(op) && influenced.count(key(op)) > 0);
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
      auto [slot, fresh] = cotangents.try_emplace(key(op), grads[j]);
      if (!fresh) slot->second = slot->second + grads[j];
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
