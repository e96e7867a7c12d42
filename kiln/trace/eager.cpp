// Eager op execution with a per-context executable cache keyed by the op's IR text.
#include "kiln/trace/eager.h"

#include <sstream>

#include "kiln/ir/builder.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/backend_registry.h"

namespace kiln::trace {
namespace {

thread_local std::vector<std::shared_ptr<EagerContext>> t_eager_stack;

}  // namespace

std::shared_ptr<runtime::Backend> default_backend() { return runtime::default_backend(); }

EagerContext::EagerContext(std::shared_ptr<runtime::Backend> backend)
    : backend_(std::move(backend)) {}

int64_t EagerContext::cache_size() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(cache_.size());
}

HostTensor EagerContext::run(ir::Opcode op, const std::vector<HostTensor>& operands,
                             const ir::Attrs& attrs, const Shape* declared,
                             const std::string& source) {
  auto module = std::make_unique<ir::Module>(str_cat("eager_", ir::opcode_name(op)));
  ir::Builder b(module->entry());
  b.set_source(source);
  std::vector<ir::Instruction*> params;
  std::ostringstream key;
  for (size_t i = 0; i < operands.size(); ++i) {
    params.push_back(b.parameter(operands[i].shape(), str_cat("x", i)));
    key << operands[i].shape() << ";";
  }
  ir::Instruction* inst = b.add(op, params, attrs, declared);
  module->entry()->add_output(inst);
  // describe() prints every attribute but the pad value at full precision; add it.
  key << ir::describe(*inst) << ";" << std::hexfloat << attrs.scalar;

  std::lock_guard lock(mutex_);
  auto it = cache_.find(key.str());
  if (it == cache_.end()) {
    runtime::CompileOptions options;
    options.label = module->name();
    options.batch_invariant = true;  // so a model called eagerly gives predict's bits (docs/numerics.md)
    it = cache_.emplace(key.str(), backend_->compile(std::move(module), options)).first;
  }
  std::vector<HostTensor> args = operands;
  std::vector<HostTensor> results = it->second->run(args);
  KILN_CHECK(results.size() == 1, "eager op returned ", results.size(), " results");
  return results[0];
}

EagerContext& current_eager_context() {
  if (t_eager_stack.empty())
    t_eager_stack.push_back(std::make_shared<EagerContext>(default_backend()));
  return *t_eager_stack.back();
}

EagerScope::EagerScope(std::shared_ptr<runtime::Backend> backend)
    : EagerScope(std::make_shared<EagerContext>(std::move(backend))) {}

EagerScope::EagerScope(std::shared_ptr<EagerContext> context) {
  current_eager_context();  // keep the thread's default at the bottom of the stack
  t_eager_stack.push_back(std::move(context));
}

EagerScope::~EagerScope() { t_eager_stack.pop_back(); }

}  // namespace kiln::trace
