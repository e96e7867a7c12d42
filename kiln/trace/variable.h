// Variable: named, persistent state (weights, optimizer slots, counters). Copies share the
// same storage. Inside a kiln::function trace a read becomes an entry parameter and an assign
// becomes an output aliased to it, so the compiled step updates the storage in place.
#pragma once

#include <memory>
#include <string>

#include "kiln/core/host_tensor.h"
#include "kiln/trace/tensor.h"

namespace kiln {

namespace trace {
struct VariableState;
}

class Variable {
 public:
  /// An empty handle (defined() is false).
  Variable() = default;
  /// A variable named `name` holding `initial` (copied into its own storage).
  Variable(std::string name, const HostTensor& initial, bool trainable = true);

  bool defined() const { return state_ != nullptr; }
  const std::string& name() const;
  const Shape& shape() const;
  DType dtype() const { return shape().dtype(); }
  bool trainable() const;
  /// Makes this a per-replica accumulator (a metric's total or count): replicas update their
  /// own copies, and read() outside a step sums them, so a custom loop under a strategy reads
  /// the global value (tf.distribute's SyncOnRead, SUM).
  void set_sum_on_read(bool on) const;

  /// The current value: symbolic inside a trace (the variable's parameter, or the value last
  /// assigned in this trace), a snapshot copy outside one.
  Tensor read() const;
  operator Tensor() const { return read(); }  // NOLINT: variables are used as tensors

  /// Sets the value (same shape; the dtype converts). Inside a trace the compiled step writes
  /// it in place; outside, the storage is overwritten now. Storage identity never changes.
  void assign(const Tensor& value) const;
  void assign_add(const Tensor& delta) const;
  void assign_sub(const Tensor& delta) const;

  /// The persistent storage (shares memory; mutated in place by steps and assigns). The
  /// caller may write through it, so a copy the steps keep on a device is dropped (the next
  /// step copies the value again); to read only, use host_value().
  const HostTensor& storage() const;
  /// The value in host storage, to read only (saving, get_weights, callbacks): brought back
  /// when a step left a newer value on a device, whose copy stays for the next step. Valid
  /// until the next step or assign.
  const HostTensor& host_value() const;
  /// Identity of the underlying state (equal for copies of one variable).
  const std::shared_ptr<trace::VariableState>& state() const { return state_; }

 private:
  std::shared_ptr<trace::VariableState> state_;
};

}  // namespace kiln
