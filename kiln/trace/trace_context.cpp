// TraceContext bookkeeping: parameters, constants, variable capture and aliasing, and the
// thread-local trace and source-name stacks.
#include "kiln/trace/trace_context.h"

#include "kiln/core/check.h"

namespace kiln::trace {
namespace {

thread_local std::vector<TraceContext*> t_traces;
thread_local std::vector<std::string> t_sources;

}  // namespace

TraceContext::TraceContext(std::string name)
    : name_(std::move(name)), module_(std::make_unique<ir::Module>(name_)) {
  frames_.push_back(Frame{module_->entry(), ir::Builder(module_->entry()), {}, {}});
}

TraceContext* TraceContext::current() { return t_traces.empty() ? nullptr : t_traces.back(); }

ir::Builder& TraceContext::builder() {
  KILN_CHECK(module_ != nullptr, "trace '", name_, "' used after finish()");
  ir::Builder& b = frames_.back().builder;
  b.set_source(SourceScope::current());
  return b;
}

void TraceContext::push_computation(ir::Computation* computation) {
  KILN_CHECK(computation->module() == module_.get(), "nested computation of another module");
  frames_.push_back(Frame{computation, ir::Builder(computation), {}, {}});
}

void TraceContext::pop_computation() {
  KILN_CHECK(frames_.size() > 1, "pop_computation without a nested computation");
  frames_.pop_back();
}

const std::vector<TraceContext::ValueCapture>& TraceContext::captures() const {
  KILN_CHECK(frames_.size() > 1, "captures() outside a nested computation");
  return frames_.back().captures;
}

ir::Instruction* TraceContext::capture_value(ir::Instruction* outer) {
  KILN_CHECK(frames_.size() > 1, "capture_value() outside a nested computation");
  return lower_into(frames_.size() - 1, outer, "capture");
}

ir::Instruction* TraceContext::lower_into(size_t depth, ir::Instruction* inst, const std::string& where) {
  Frame& f = frames_[depth];
  if (inst->parent() == f.computation) return inst;
  if (depth == 0)
    KILN_THROW(ValueError, "[", where, "] received a symbolic tensor ", inst->shape(), " made inside a "
               "while_loop/cond/scan body, outside that body. Hint: return it from the body instead.");
  for (const ValueCapture& c : f.captures)
    if (c.origin == inst || c.outer == inst) return c.parameter;
  ir::Instruction* outer = lower_into(depth - 1, inst, where);
  for (const ValueCapture& c : f.captures)
    if (c.outer == outer) return c.parameter;
  ir::Instruction* param = f.computation->add_parameter(outer->shape(), str_cat("capture.", outer->id()));
  f.captures.push_back({inst, outer, param});
  return param;
}

Tensor TraceContext::add_input(const Shape& shape, const std::string& name) {
  return wrap(builder().parameter(shape, name));
}

Tensor TraceContext::wrap(ir::Instruction* instruction) const {
  auto node = std::make_shared<TensorNode>();
  node->shape = instruction->shape();
  node->instruction = instruction;
  node->context = this;
  node->alive = alive_;
  return Tensor(std::move(node));
}

ir::Instruction* TraceContext::lower(const Tensor& t, const std::string& where) {
  KILN_CHECK(t.defined(), "[", where, "] undefined tensor passed to an op");
  const std::shared_ptr<TensorNode>& node = t.node();
  if (node->instruction != nullptr) {
    if (node->context != this || node->alive.expired())
      KILN_THROW(ValueError, "[", where, "] received a symbolic tensor ", node->shape,
                 " from another trace (or one that has finished) inside trace '", name_,
                 "'. Hint: return tensors from a kiln::function instead of keeping them, and "
                 "pass values between functions as arguments.");
    return lower_into(frames_.size() - 1, node->instruction, where);
  }
  auto& constants = frames_.back().constants;
  auto it = constants.find(node.get());
  if (it != constants.end()) return it->second.second;
  ir::Instruction* c = builder().constant(node->value);
  constants.emplace(node.get(), std::make_pair(node, c));
  return c;
}

TraceContext::Capture& TraceContext::capture(const std::shared_ptr<VariableState>& variable) {
  auto it = capture_index_.find(variable.get());
  if (it != capture_index_.end()) return captures_[it->second];
  Capture c;
  c.variable = variable;
  // A variable is an entry parameter even when first read inside a nested computation.
  ir::Builder& entry = frames_.front().builder;
  entry.set_source(SourceScope::current());
  c.parameter = entry.parameter(variable->storage.shape(), variable->name);
  c.current = wrap(c.parameter);
  capture_index_.emplace(variable.get(), captures_.size());
  captures_.push_back(std::move(c));
  return captures_.back();
}

void TraceContext::carry_variable(const VariableState* variable, const Tensor& value) {
  KILN_CHECK(frames_.size() > 1, "carry_variable outside a nested computation");
  frames_.back().carried[variable] = value;
}

Tensor TraceContext::read_variable(const std::shared_ptr<VariableState>& variable) {
  for (size_t d = frames_.size(); d-- > 1;)
    if (auto it = frames_[d].carried.find(variable.get()); it != frames_[d].carried.end()) return it->second;
  if (auto it = read_overrides_.find(variable.get()); it != read_overrides_.end()) return it->second;
  return capture(variable).current;
}

void TraceContext::assign_variable(const std::shared_ptr<VariableState>& variable,
                                   const Tensor& value) {
  if (frames_.size() > 1) {
    if (auto it = frames_.back().carried.find(variable.get()); it != frames_.back().carried.end()) {
      lower(value, "variable '" + variable->name + "'");  // checks it belongs here
      it->second = value;
      return;
    }
    KILN_THROW(ValueError, "[variable '", variable->name, "'] assigned inside a while_loop/cond/scan body; "
               "the body must be a pure function of its arguments. Hint: carry the new value out of the "
               "loop and assign it after.");
  }
  Capture& c = capture(variable);
  lower(value, "variable '" + variable->name + "'");  // checks it belongs here
  c.current = value;
  c.assigned = true;
}

std::vector<std::shared_ptr<VariableState>> TraceContext::captured_variables() const {
  std::vector<std::shared_ptr<VariableState>> out;
  for (const Capture& c : captures_) out.push_back(c.variable);
  return out;
}

std::unique_ptr<ir::Module> TraceContext::finish(const std::vector<Tensor>& outputs) {
  KILN_CHECK(frames_.size() == 1, "trace '", name_, "' finished inside a nested computation");
  ir::Computation* entry = module_->entry();
  for (size_t i = 0; i < outputs.size(); ++i)
    entry->add_output(lower(outputs[i], str_cat(name_, " output ", i)));
  for (const Capture& c : captures_) {
    ir::Instruction* value = lower(c.current, "variable '" + c.variable->name + "'");
    if (!c.assigned || value == c.parameter) continue;
    module_->add_alias({static_cast<int>(entry->outputs().size()),
                        static_cast<int>(c.parameter->attrs().parameter_index)});
    entry->add_output(value);
  }
  alive_.reset();  // tensors of this trace are now stale
  return std::move(module_);
}

TraceScope::TraceScope(TraceContext* context) { t_traces.push_back(context); }
TraceScope::~TraceScope() { t_traces.pop_back(); }

}  // namespace kiln::trace

namespace kiln {

SourceScope::SourceScope(std::string name) { trace::t_sources.push_back(std::move(name)); }
SourceScope::~SourceScope() { trace::t_sources.pop_back(); }

std::string SourceScope::current() { return str_join(trace::t_sources, "/"); }

}  // namespace kiln
