// Variable reads and assigns, in a trace (parameters and aliased outputs) or eagerly.
#include "kiln/trace/variable.h"

#include <cstring>

#include "kiln/trace/autocast_scope.h"
#include "kiln/trace/device_values.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/replica_context.h"
#include "kiln/trace/trace_context.h"

namespace kiln {

Variable::Variable(std::string name, const HostTensor& initial, bool trainable) {
  KILN_CHECK(initial.defined(), "Variable '", name, "' made from an undefined HostTensor");
  state_ = std::make_shared<trace::VariableState>();
  state_->name = std::move(name);
  state_->storage = initial.clone();
  state_->trainable = trainable;
  trace::ensure_mirrors(*state_, trace::current_mirror_count());  // inside a strategy's scope()
}

const std::string& Variable::name() const {
  KILN_CHECK(defined(), "use of an undefined Variable");
  return state_->name;
}
const Shape& Variable::shape() const {
  KILN_CHECK(defined(), "use of an undefined Variable");
  return state_->storage.shape();
}
bool Variable::trainable() const {
  KILN_CHECK(defined(), "use of an undefined Variable");
  return state_->trainable;
}
const HostTensor& Variable::storage() const {
  KILN_CHECK(defined(), "use of an undefined Variable");
  trace::sync_to_host(*state_, /*for_write=*/true);  // the caller may write through it
  return state_->storage;
}

const HostTensor& Variable::host_value() const {
  KILN_CHECK(defined(), "use of an undefined Variable");
  trace::sync_to_host(*state_, /*for_write=*/false);
  return state_->storage;
}

void Variable::set_sum_on_read(bool on) const {
  KILN_CHECK(defined(), "set_sum_on_read of an undefined Variable");
  state_->sum_on_read = on;
}

namespace {

// The sum of a per-replica accumulator's copies, in replica order.
HostTensor summed_copies(const trace::VariableState& s) {
  std::vector<double> sum = s.storage.to_vector<double>();
  for (const HostTensor& m : s.mirrors) {
    const std::vector<double> v = m.to_vector<double>();
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += v[i];
  }
  return HostTensor::from_vector<double>(s.storage.dims(), sum).astype(s.storage.dtype());
}

}  // namespace

Tensor Variable::read() const {
  KILN_CHECK(defined(), "read of an undefined Variable");
  if (trace::TraceContext::current() == nullptr) trace::sync_to_host(*state_, /*for_write=*/false);
  Tensor value = trace::TraceContext::current() != nullptr ? trace::TraceContext::current()->read_variable(state_)
                 : state_->sum_on_read && !state_->mirrors.empty() ? Tensor(summed_copies(*state_))
                                                                    : Tensor(state_->storage.clone());
  trace::record_variable_read(state_, value);
  // The tape records the stored value; the cast is an op after it, differentiated like any.
  if (const std::optional<DType> to = trace::AutocastScope::current(); to && is_floating(dtype()) && *to != dtype())
    return cast(value, *to);
  return value;
}

void Variable::assign(const Tensor& value) const {
  KILN_CHECK(defined(), "assign to an undefined Variable");
  if (value.dims() != shape().dims())
    KILN_THROW(ShapeError, "[variable '", state_->name, "'] assign expects ", shape(),
               ", received ", value.shape(), ". Hint: a variable's shape is fixed when it is made.");
  Tensor converted = cast(value, dtype());
  if (trace::TraceContext* ctx = trace::TraceContext::current()) {
    ctx->assign_variable(state_, converted);
    return;
  }
  HostTensor v = converted.value();
  trace::discard_device_values(*state_);  // every copy is overwritten: nothing to bring back
  std::memcpy(state_->storage.raw_data(), v.raw_data(), static_cast<size_t>(v.byte_size()));
  for (HostTensor& mirror : state_->mirrors)  // mirrored copies stay identical
    std::memcpy(mirror.raw_data(), v.raw_data(), static_cast<size_t>(v.byte_size()));
}

void Variable::assign_add(const Tensor& delta) const { assign(read() + delta); }
void Variable::assign_sub(const Tensor& delta) const { assign(read() - delta); }

}  // namespace kiln
