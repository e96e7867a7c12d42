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
    : name_(std::move(name)),
      module_(std::make_unique<ir::Module>(name_)),
      builder_(module_->entry()) {}

TraceContext* TraceContext::current() { return t_traces.empty() ? nullptr : t_traces.back(); }

ir::Builder& TraceContext::builder() {
  KILN_CHECK(module_ != nullptr, "trace '", name_, "' used after finish()");
  builder_.set_source(SourceScope::current());
  return builder_;
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
    return node->instruction;
  }
  auto it = constants_.find(node.get());
  if (it != constants_.end()) return it->second.second;
  ir::Instruction* c = builder().constant(node->value);
  constants_.emplace(node.get(), std::make_pair(node, c));
  return c;
}

TraceContext::Capture& TraceContext::capture(const std::shared_ptr<VariableState>& variable) {
  auto it = capture_index_.find(variable.get());
  if (it != capture_index_.end()) return captures_[it->second];
  Capture c;
  c.variable = variable;
  c.parameter = builder().parameter(variable->storage.shape(), variable->name);
  c.current = wrap(c.parameter);
  capture_index_.emplace(variable.get(), captures_.size());
  captures_.push_back(std::move(c));
  return captures_.back();
}

Tensor TraceContext::read_variable(const std::shared_ptr<VariableState>& variable) {
  if (auto it = read_overrides_.find(variable.get()); it != read_overrides_.end()) return it->second;
  return capture(variable).current;
}

void TraceContext::assign_variable(const std::shared_ptr<VariableState>& variable,
                                   const Tensor& value) {
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
