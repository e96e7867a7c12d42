// CudaExecutable: a program lowered for one GPU, as a list of steps over numbered values
// (arguments, constants uploaded at compile time, and values computed by the steps, each in a
// buffer of the device's caching allocator). execute() queues every step on the device's compute
// stream, then the copies of variable updates into the arguments they alias (donated buffers),
// and returns without waiting: the outputs' ready event completes when the GPU has run them. A
// while or conditional is a control step running nested step lists over the same values.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kiln/ir/module.h"
#include "kiln/runtime/buffer.h"
#include "kiln/runtime/executable.h"

namespace kiln::cuda {

class CudaDevice;
class CudaRun;
struct CudaStep;

/// A step list a control step runs: a while's condition or body, a conditional's branch.
struct NestedSteps {
  std::string name;  // "condition", "body", "branch 1", for describe()
  std::vector<CudaStep> steps;
};

struct CudaStep {
  std::string label;
  std::vector<int> reads, writes;  // value ids
  /// Queues the step's work on `stream`; `in`/`out` are the device addresses of reads/writes,
  /// `workspace` the program's workspace_bytes() of scratch (steps run one after another).
  std::function<void(CUstream stream, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr workspace)> run;
  /// A control step (while, conditional) has no `run`: `control` runs `nested` (lowered into
  /// the program's value table and PTX module) through the execute's CudaRun.
  std::vector<NestedSteps> nested;
  std::function<void(CudaRun& run, const std::vector<NestedSteps>& nested)> control;
};

/// One execute's value table while its steps are queued: each value's buffer and device
/// address, the stream and the workspace. Every value of the program, nested step lists'
/// included, has its buffer for the whole execute, so nested runs' temporaries live until the
/// step ends. A control step swaps two values' buffers (a while's carried value and the body's
/// new value of it) instead of copying, and reads predicates and selectors to the host.
class CudaRun {
 public:
  CudaRun(CudaDevice& device, CUstream stream, std::vector<runtime::Buffer> buffers, runtime::Buffer workspace);
  /// Queues `steps` in order (control steps run their nested lists, waiting where they must).
  void run(const std::vector<CudaStep>& steps);
  /// Value `a` takes `b`'s buffer and `b` takes `a`'s (both values the steps compute).
  void swap(int a, int b);
  /// Queues a copy of value `from` into value `to` (of the same size).
  void copy(int from, int to);
  /// Value `v`'s first `bytes` on the host, once the work queued so far has run: a copy into
  /// the pinned `host` and a wait for the stream (a host round trip, as XLA's GPU while does).
  void read_to_host(int v, void* host, size_t bytes);
  /// Blocks until the work queued so far has run (before an error leaves execute, so no
  /// kernel still uses the buffers it frees).
  void wait();
  const runtime::Buffer& buffer(int v) const { return buffers_[static_cast<size_t>(v)]; }
  /// Every value's buffer and the workspace (all the memory the queued steps use).
  const std::vector<runtime::Buffer>& buffers() const { return buffers_; }
  const runtime::Buffer& workspace() const { return workspace_; }
  CUdeviceptr address(int v) const { return address_[static_cast<size_t>(v)]; }
  CUstream stream() const { return stream_; }

 private:
  CudaDevice& device_;
  CUstream stream_;
  std::vector<runtime::Buffer> buffers_;
  std::vector<CUdeviceptr> address_;
  runtime::Buffer workspace_;
  std::vector<CUdeviceptr> in_, out_;
};

class CudaExecutable final : public runtime::Executable {
 public:
  /// `device` null: a program lowered without a GPU (lower_to_ptx), which cannot run.
  CudaExecutable(std::unique_ptr<ir::Module> module, CudaDevice* device);
  /// Waits for the last queued run: its steps use what the program holds.
  ~CudaExecutable() override;

  /// A value of `shape`: argument `argument` (>= 0), the uploaded `constant`, or (neither) one
  /// the steps compute. Returns its id.
  int add_value(const Shape& shape, int argument = -1, runtime::Buffer constant = {});
  void add_step(CudaStep step) { steps_.push_back(std::move(step)); }
  /// A value's shape (every value, nested step lists' included), and how many there are.
  Shape value_shape(int v) const { return values_.at(static_cast<size_t>(v)).shape; }
  int value_count() const { return static_cast<int>(values_.size()); }
  /// Raises the scratch every step gets to at least `bytes` (cuBLASLt's fixed amount, or what
  /// a cuDNN algorithm asks for); allocated per run from the device's caching allocator.
  void need_workspace(size_t bytes) { workspace_bytes_ = std::max(workspace_bytes_, bytes); }
  size_t workspace_bytes() const { return workspace_bytes_; }
  /// The entry outputs, as value ids.
  void set_outputs(std::vector<int> values) { outputs_ = std::move(values); }
  /// Places the values the steps compute (not outputs) in one arena per run, by their
  /// lifetimes over the steps (best fit, compiler::pack_lifetimes): one allocation per run
  /// instead of one per value, and values that never live at once share bytes. Call once the
  /// steps and outputs are final.
  void plan_arena();
  /// Keeps what the steps use alive as long as the program (loaded modules, cuBLASLt plans).
  void hold(std::shared_ptr<void> resource) { held_.push_back(std::move(resource)); }
  /// Runs after each run's GPU work ended (or failed), before its outputs are handed out: an
  /// NCCL reduction another replica's failure aborted throws ReplicaAborted there. A program
  /// with finish checks waits for its GPU work in execute (no asynchronous return).
  void add_finish_check(std::function<void()> check) { finish_checks_.push_back(std::move(check)); }

  /// Queues one step on `device` over argument buffers, in parameter order, and returns
  /// before it ran: every output's ready() is an event recorded after the step, which to_host
  /// and later steps wait on; a GPU error of the step throws there (CudaDevice::wait_on_host),
  /// naming the program. Outputs aliased to a parameter share that argument's memory.
  std::vector<runtime::Buffer> execute(CudaDevice& device, std::span<const runtime::Buffer> arguments);

  /// Copies the arguments to the GPU, runs, and copies the outputs back (aliased outputs into
  /// their argument's storage, as the CPU backend updates it in place).
  std::vector<HostTensor> run(std::span<HostTensor> arguments) override;
  /// No memory plan yet: every computed value has its own buffer for the whole step.
  int64_t planned_peak_bytes() const override;
  /// Steps, nested step lists' included (a control step itself counts as none).
  int kernel_count() const override;
  std::string describe() const override;
  const ir::Module* lowered_module() const override { return module_.get(); }

 private:
  struct Value {
    Shape shape;
    int argument = -1;
    runtime::Buffer constant;
  };
  std::unique_ptr<ir::Module> module_;
  CudaDevice* device_;
  std::vector<Value> values_;
  std::vector<CudaStep> steps_;
  std::vector<int> outputs_;
  std::vector<int64_t> arena_offset_;  // per value; -1: its own buffer (arguments, constants, outputs)
  int64_t arena_bytes_ = 0;
  std::vector<std::shared_ptr<void>> held_;
  std::vector<std::function<void()>> finish_checks_;
  size_t workspace_bytes_;
  std::mutex last_done_mutex_;
  runtime::Event last_done_;  // the last run's completion, waited for by the destructor
};

}  // namespace kiln::cuda
