// Dispatch of ops to the current trace or to the eager executor, and tape recording.
#include "kiln/trace/emit.h"

#include "kiln/core/dtype_dispatch.h"
#include "kiln/trace/eager.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/trace_context.h"

namespace kiln::trace {

std::string where(std::string_view op_name) {
  std::string scope = SourceScope::current();
  return scope.empty() ? std::string(op_name) : str_cat(scope, "/", op_name);
}

Tensor emit(ir::Opcode op, const std::vector<Tensor>& operands, ir::Attrs attrs,
            const Shape* declared) {
  Tensor out;
  if (TraceContext* ctx = TraceContext::current()) {
    std::vector<ir::Instruction*> ins;
    ins.reserve(operands.size());
    for (const Tensor& t : operands) ins.push_back(ctx->lower(t, where(ir::opcode_name(op))));
    out = ctx->wrap(ctx->builder().add(op, std::move(ins), attrs, declared));
  } else {
    std::vector<HostTensor> values;
    values.reserve(operands.size());
    for (const Tensor& t : operands) {
      KILN_CHECK(t.defined(), "[", ir::opcode_name(op), "] undefined tensor operand");
      if (t.is_symbolic())
        KILN_THROW(ValueError, "[", where(ir::opcode_name(op)), "] received a symbolic ",
                   t.shape(), " tensor outside the trace that made it. Hint: return it from the "
                   "kiln::function and use the returned value.");
      values.push_back(t.value());
    }
    out = Tensor(current_eager_context().run(op, values, attrs, declared, SourceScope::current()));
  }
  record_on_tapes(op, attrs, operands, out);
  return out;
}

Tensor constant(HostTensor value) {
  if (TraceContext* ctx = TraceContext::current())
    return ctx->wrap(ctx->builder().constant(std::move(value)));
  return Tensor(std::move(value));
}

Tensor full(const Shape& shape, double value) {
  if (TraceContext* ctx = TraceContext::current()) return ctx->wrap(ctx->builder().full(shape, value));
  HostTensor t(shape);
  visit_dtype(shape.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = from_double<T>(value);
    T* p = static_cast<T*>(t.raw_data());
    for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = v;
  });
  return Tensor(std::move(t));
}

}  // namespace kiln::trace
