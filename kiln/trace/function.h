// kiln::function: traces a C++ callable once per input signature (dtypes + static shapes)
// into one ir::Module, compiles it with a Backend, caches the Executable by signature, and
// runs it on HostTensors with the captured variables' storage updated in place. Logs each
// compile and warns when retracing repeats (S19); dynamic or mismatched shapes against a
// declared input_signature are CompileErrors naming the input (S23).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/host_tensor.h"
#include "kiln/runtime/backend.h"
#include "kiln/trace/tensor.h"

namespace kiln {

namespace trace {
struct VariableState;
}

/// A declared input: fixed dims (-1 marks a dynamic dim, which Kiln rejects with a hint),
/// dtype and a name used in messages and as the parameter name.
struct TensorSpec {
  Dims shape;
  DType dtype = DType::kF32;
  std::string name;
};

struct FunctionOptions {
  /// The backend to compile for; null means trace::default_backend().
  std::shared_ptr<runtime::Backend> backend;
  /// When set, every call must match it (count, dtypes, dims).
  std::optional<std::vector<TensorSpec>> input_signature;
  /// Warn once more distinct signatures than this have been traced (tf.function uses 5).
  int max_traces_before_warning = 5;
  /// Compile batch-invariant programs (runtime::CompileOptions::batch_invariant).
  bool batch_invariant = false;
};

class Function {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

  Function(std::string name, Fn fn, FunctionOptions options = {});
  /// For callables that return one Tensor.
  Function(std::string name, std::function<Tensor(const std::vector<Tensor>&)> fn,
           FunctionOptions options = {});

  /// Runs the step for `args` (tracing and compiling on a new signature); returns the
  /// callable's outputs. Assigned variables are updated in their storage.
  std::vector<HostTensor> operator()(const std::vector<HostTensor>& args);
  /// The same with the inputs already on the backend's device (the batches of a
  /// prefetch_to_device dataset): nothing is copied on the way in. ValueError naming the
  /// devices when an input lives on another one.
  std::vector<HostTensor> call_on_device(const std::vector<runtime::Buffer>& args);
  /// Traces and compiles for `signature` unless cached, without running: Model::fit compiles
  /// its step from the dataset's element_spec before the pipeline makes a batch, so a step
  /// too large for memory fails first. Under a strategy, call it as each replica.
  void compile(const std::vector<Shape>& signature);

  const std::string& name() const { return name_; }
  /// Number of times the callable has been traced (one per distinct signature).
  int trace_count() const { return trace_count_; }
  /// The most recently compiled executable (kernel_count, describe, planned_peak_bytes).
  const runtime::Executable* last_executable() const { return last_executable_; }
  /// IR text of the most recently traced module, before compilation.
  const std::string& last_ir() const { return last_ir_; }
  /// "(f32[128,784], i32[128])".
  static std::string signature_text(const std::vector<HostTensor>& args);
  static std::string signature_text(const std::vector<Shape>& shapes);

 private:
  struct Compiled {
    std::unique_ptr<runtime::Executable> executable;
    std::vector<std::shared_ptr<trace::VariableState>> variables;
    size_t num_outputs = 0;
    std::vector<ir::OutputAlias> aliases;
  };
  void check_signature(const std::vector<Shape>& args) const;
  Compiled trace_and_compile(const std::vector<Shape>& args, const std::string& signature);
  /// The cache entry for `args` on the calling replica, traced and compiled when new.
  Compiled& compiled_for(const std::vector<Shape>& args);
  /// Runs `c` over `run_args` (the inputs, then room for the variables) on the device.
  std::vector<HostTensor> run(Compiled& c, std::vector<runtime::Buffer> run_args);
  /// The calling replica's backend where its strategy places it (GPU replicas), else options_.backend.
  runtime::Backend& backend_here() const;

  std::string name_;
  Fn fn_;
  FunctionOptions options_;
  // One entry per signature and replica (-1 outside a strategy: replica 0's executable is
  // bound to the strategy's collectives), found by comparing shapes (few entries; formatting a
  // signature text per call cost microseconds). A deque keeps references to its entries.
  struct CacheEntry {
    std::vector<Shape> shapes;
    int replica_id;
    Compiled compiled;
  };
  std::deque<CacheEntry> cache_;
  // Replicas of a strategy call concurrently; they trace one at a time (a pointer keeps
  // Function movable).
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  int trace_count_ = 0;
  bool warned_ = false;
  const runtime::Executable* last_executable_ = nullptr;
  std::string last_ir_;
};

/// kiln::function("train_step", fn, options): the tf.function of Kiln. `fn` takes the inputs
/// as std::vector<Tensor> and returns std::vector<Tensor> or one Tensor.
template <typename F>
Function function(std::string name, F&& fn, FunctionOptions options = {}) {
  return Function(std::move(name), std::forward<F>(fn), std::move(options));
}

}  // namespace kiln
