// The replica and mirror scopes (thread_local stacks), mirrored storage, and all_reduce.
#include "kiln/trace/replica_context.h"

#include <map>
#include <vector>

#include "kiln/core/check.h"
#include "kiln/trace/emit.h"
#include "kiln/trace/ops/collective.h"
#include "kiln/trace/ops/shape.h"
#include "kiln/trace/trace_context.h"

namespace kiln::trace {
namespace {

thread_local std::vector<ReplicaContext> t_replicas;
thread_local std::vector<int> t_mirrors;

}  // namespace

const ReplicaContext* current_replica_context() { return t_replicas.empty() ? nullptr : &t_replicas.back(); }

ReplicaScope::ReplicaScope(ReplicaContext context) { t_replicas.push_back(std::move(context)); }
ReplicaScope::~ReplicaScope() { t_replicas.pop_back(); }

MirrorScope::MirrorScope(int copies) { t_mirrors.push_back(copies); }
MirrorScope::~MirrorScope() { t_mirrors.pop_back(); }

int current_mirror_count() {
  if (!t_replicas.empty()) return t_replicas.back().num_local_replicas;
  return t_mirrors.empty() ? 1 : t_mirrors.back();
}

void ensure_mirrors(VariableState& variable, int copies) {
  while (static_cast<int>(variable.mirrors.size()) + 1 < copies) variable.mirrors.push_back(variable.storage.clone());
  variable.device_values.resize(variable.mirrors.size() + 1);
  variable.device_newer.resize(variable.mirrors.size() + 1, 0);
}

HostTensor& replica_storage(VariableState& variable, int replica) {
  KILN_CHECK(replica >= 0, "negative replica id ", replica);
  if (replica == 0) return variable.storage;
  ensure_mirrors(variable, replica + 1);
  return variable.mirrors[static_cast<size_t>(replica - 1)];
}

}  // namespace kiln::trace

namespace kiln {

Tensor all_reduce(const Tensor& x, ir::ReduceKind kind, const ReplicaGroups& groups) {
  if (!groups.empty())
    return trace::emit_collective(ir::Opcode::kAllReduce, x, [&](ir::Attrs& a) { a.reduce_kind = kind; }, groups);
  const trace::ReplicaContext* rc = trace::current_replica_context();
  if (rc == nullptr || rc->num_replicas_in_sync() <= 1) return x;
  if (trace::TraceContext::current() == nullptr)
    KILN_THROW(ValueError, "[", trace::where("all_reduce"), "] all_reduce over ", rc->num_replicas_in_sync(),
               " replicas runs inside a compiled step only. Hint: call it in the kiln::function the "
               "strategy runs.");
  ir::Attrs attrs;
  attrs.reduce_kind = kind;
  return trace::emit(ir::Opcode::kAllReduce, {x}, attrs);
}

}  // namespace kiln

namespace kiln::trace {

SummedReads::SummedReads(const std::vector<Variable>& variables) {
  const ReplicaContext* rc = current_replica_context();
  TraceContext* ctx = TraceContext::current();
  if (rc == nullptr || rc->num_replicas_in_sync() <= 1 || ctx == nullptr) return;
  // One collective per dtype instead of one per variable: pack the values into a vector.
  std::map<DType, std::vector<const Variable*>> by_dtype;
  for (const Variable& v : variables) by_dtype[v.dtype()].push_back(&v);
  for (const auto& [dtype, group] : by_dtype) {
    std::vector<Tensor> flat;
    for (const Variable* v : group) flat.push_back(reshape(v->read(), {v->shape().num_elements()}));
    const Tensor sums = all_reduce(flat.size() == 1 ? flat[0] : concat(flat, 0), ir::ReduceKind::kSum);
    int64_t offset = 0;
    for (const Variable* v : group) {
      const int64_t n = v->shape().num_elements();
      ctx->set_read_override(v->state().get(), reshape(slice(sums, {offset}, {offset + n}), v->shape().dims()));
      overridden_.push_back(v->state().get());
      offset += n;
    }
  }
  context_ = ctx;
}

SummedReads::~SummedReads() {
  for (const VariableState* v : overridden_) context_->clear_read_override(v);
}

}  // namespace kiln::trace
