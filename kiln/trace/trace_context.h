// TraceContext: the module being built while a kiln::function traces its callable, with the
// variables it captured; plus the thread-local stacks that say which trace (and which source
// name, for error messages) is current. Internal to trace/; users meet it through Function.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/runtime/buffer.h"
#include "kiln/trace/tensor.h"

namespace kiln::trace {

/// What a Tensor handle refers to: a value (concrete) or an instruction of a live trace.
struct TensorNode {
  Shape shape;
  HostTensor value;                        // concrete tensors
  ir::Instruction* instruction = nullptr;  // symbolic tensors
  const TraceContext* context = nullptr;   // the trace `instruction` belongs to
  std::weak_ptr<const void> alive;         // expires when that trace ends
};

/// Persistent state behind a kiln::Variable (shared by its copies).
struct VariableState {
  std::string name;
  HostTensor storage;  // updated in place; its identity never changes
  bool trainable = true;
  /// Replicas 1..n-1's copies of a mirrored variable (replica_context.h); empty otherwise.
  std::vector<HostTensor> mirrors;
  /// tf.distribute's SyncOnRead variable with SUM aggregation (metric accumulators): each
  /// replica accumulates its own shard, and a read outside a step sums the copies.
  bool sum_on_read = false;
  /// Each replica's value on the device of the programs that use it (device_values.h), and
  /// whether that device copy is newer than the host storage. Sized with the mirrors.
  std::vector<runtime::Buffer> device_values = std::vector<runtime::Buffer>(1);
  std::vector<char> device_newer = std::vector<char>(1, 0);
};

class TraceContext {
 public:
  explicit TraceContext(std::string name);
  TraceContext(const TraceContext&) = delete;
  TraceContext& operator=(const TraceContext&) = delete;

  /// The trace active on this thread, or nullptr (eager mode).
  static TraceContext* current();

  const std::string& name() const { return name_; }
  ir::Module& module() { return *module_; }
  /// The builder of the computation being traced (the entry, or the innermost open nested
  /// computation), its source set from the current SourceScope.
  ir::Builder& builder();

  /// Traces ops into `computation` (a while body or condition, a branch) until the matching
  /// pop. Symbolic tensors of enclosing computations used there become its parameters
  /// (captures, appended after the ones it has), so the computation stays closed.
  void push_computation(ir::Computation* computation);
  void pop_computation();
  /// In the innermost nested computation (a loop body), reads of `variable` give `value` and
  /// an assignment replaces it, so the loop can carry the variable: the loop reads the new
  /// value back with read_variable and assigns the final one after the loop.
  void carry_variable(const VariableState* variable, const Tensor& value);
  /// How many nested computations are open (0: tracing the entry).
  size_t depth() const { return frames_.size() - 1; }
  /// A value a nested computation reads from an enclosing one.
  struct ValueCapture {
    ir::Instruction* origin;     // the instruction the user's tensor names (any enclosing level)
    ir::Instruction* outer;      // its value in the directly enclosing computation (the operand)
    ir::Instruction* parameter;  // the parameter standing for it inside
  };
  /// The captures of the innermost open nested computation, in parameter order.
  const std::vector<ValueCapture>& captures() const;
  /// The parameter of the innermost nested computation standing for `outer` (an instruction
  /// of the enclosing computation), added if new: lets a caller share captures between
  /// computations that must take the same parameters.
  ir::Instruction* capture_value(ir::Instruction* outer);

  /// Adds an entry parameter for a function input.
  Tensor add_input(const Shape& shape, const std::string& name);
  /// The instruction for `t` in this trace; concrete tensors become (cached) constants.
  /// Throws ValueError for a symbolic tensor of another (possibly finished) trace.
  ir::Instruction* lower(const Tensor& t, const std::string& where);
  /// A symbolic handle to `instruction`.
  Tensor wrap(ir::Instruction* instruction) const;

  /// The variable's value in this trace: its parameter (added on first use), or the value
  /// last assigned in this trace.
  Tensor read_variable(const std::shared_ptr<VariableState>& variable);
  /// Records `value` as the variable's new value (an output aliased to its parameter).
  void assign_variable(const std::shared_ptr<VariableState>& variable, const Tensor& value);
  /// Until cleared, reads of `variable` give `value` instead of its value (SummedReads).
  void set_read_override(const VariableState* variable, const Tensor& value) { read_overrides_[variable] = value; }
  void clear_read_override(const VariableState* variable) { read_overrides_.erase(variable); }
  /// Variables in parameter order (after the inputs).
  std::vector<std::shared_ptr<VariableState>> captured_variables() const;

  /// Sets the entry outputs (`outputs`, then one per assigned variable, aliased to its
  /// parameter) and hands over the module. The context accepts no more ops afterwards.
  std::unique_ptr<ir::Module> finish(const std::vector<Tensor>& outputs);

 private:
  struct Capture {
    std::shared_ptr<VariableState> variable;
    ir::Instruction* parameter = nullptr;
    Tensor current;
    bool assigned = false;
  };
  Capture& capture(const std::shared_ptr<VariableState>& variable);
  // A computation being traced: the entry (frames_[0]) or a nested one.
  struct Frame {
    ir::Computation* computation;
    ir::Builder builder;
    std::vector<ValueCapture> captures;
    std::unordered_map<const VariableState*, Tensor> carried;  // carry_variable's
    // Concrete tensors used here, lowered once each (the node is kept alive so its address
    // is not reused).
    std::unordered_map<const TensorNode*, std::pair<std::shared_ptr<TensorNode>, ir::Instruction*>> constants;
  };
  // `inst` (of frames_[depth] or an enclosing frame) as an instruction of frames_[depth].
  ir::Instruction* lower_into(size_t depth, ir::Instruction* inst, const std::string& where);

  std::string name_;
  std::unique_ptr<ir::Module> module_;
  std::vector<Frame> frames_;
  std::shared_ptr<const void> alive_ = std::make_shared<int>(0);
  std::vector<Capture> captures_;
  std::unordered_map<const VariableState*, size_t> capture_index_;
  std::unordered_map<const VariableState*, Tensor> read_overrides_;
};

/// Makes `context` the current trace of this thread for the scope's lifetime (stacked).
class TraceScope {
 public:
  explicit TraceScope(TraceContext* context);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
};

}  // namespace kiln::trace

namespace kiln {

/// Names the ops made during its lifetime (a layer or call site) so errors say where they come
/// from: `trace::SourceScope scope("dense_1");`. Nested scopes join with '/'.
class SourceScope {
 public:
  explicit SourceScope(std::string name);
  ~SourceScope();
  SourceScope(const SourceScope&) = delete;
  SourceScope& operator=(const SourceScope&) = delete;
  /// The joined names of the open scopes on this thread ("model/dense_1"), or "".
  static std::string current();
};

namespace trace {
using kiln::SourceScope;
}

}  // namespace kiln
