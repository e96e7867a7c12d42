// The GPU lowering's Lowerer: a LoweringVisitor (runtime/lowering_visitor.h) turning a
// program's instructions into CudaSteps over numbered values and one PTX module. Its handlers
// and methods are split by how an op family runs: cuda_lowering.cpp (the walk, leaves,
// copies, the PTX module), cuda_lowering_kernels.cpp (generated kernels: elementwise, views,
// reductions, rng_bits, index ops, loop fusions), cuda_lowering_libraries.cpp (cuBLASLt,
// cuDNN, NCCL and their layout helpers: dot_general, convolutions, pooling, all_reduce),
// cuda_lowering_control.cpp (while, conditional, get_tuple_element, nested programs).
// Internal to those files.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "kiln/compiler/codegen/kernel_cache.h"
#include "kiln/compiler/codegen/llvm_codegen.h"
#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/compiler/default_pipeline.h"
#include "kiln/compiler/passes/output_fusion.h"
#include "kiln/core/check.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/clone.h"
#include "kiln/ir/shape_inference.h"
#include "kiln/runtime/cuda/cublaslt_matmul_impl.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/cuda/cuda_driver_impl.h"
#include "kiln/runtime/cuda/cuda_lowering_impl.h"
#include "kiln/runtime/cuda/cudnn_ops_impl.h"
#include "kiln/runtime/cuda/nccl_collectives_impl.h"
#include "kiln/runtime/cuda/reduction_plan.h"
#include "kiln/runtime/lowering_visitor.h"

namespace kiln::cuda::lowering {

using ir::Instruction;
using ir::Opcode;

inline constexpr unsigned kBlock = 256;
inline constexpr size_t kMaxKernelPointers = 32;  // a stage's loads and its output

// A generated kernel, found in the program's PTX module once it is loaded.
struct KernelRef {
  std::string symbol;
  CUfunction function = nullptr;
};

// `threads` threads of `kernel` in blocks of kBlock, on `stream`.
void launch(const KernelRef& kernel, int64_t threads, void** params, CUstream stream);

class Lowerer : public runtime::LoweringVisitor {
 public:
  /// `device` null: a dry run (no GPU touched) that only decides the steps and generates the
  /// PTX, for a compute capability of `compute_capability`.
  Lowerer(CudaExecutable& exe, CudaDevice* device, int compute_capability, const runtime::CompileOptions& options)
      : exe_(exe), device_(device), compute_capability_(compute_capability), options_(options),
        label_(options.label.empty() ? exe.lowered_module()->name() : options.label),
        target_("cuda", device != nullptr ? device->memory_bytes() : std::numeric_limits<int64_t>::max(), 256),
        scratch_(std::make_shared<ir::Module>("cuda_scratch")) {}

  const std::string& ptx() const { return ptx_; }

  void lower_all();

 private:
  static std::string op_key(const Instruction& inst);

  // A literal uploaded once, now (a dry run only numbers it).
  int add_constant(const HostTensor& literal);

  void emit(CudaStep step);

  // `c`'s instructions as steps of the current list; its parameters are the program's
  // arguments (`bound` null: the entry) or the values `bound` names (a nested computation).
  void lower_computation(const ir::Computation& c, const std::vector<int>* bound);

  std::vector<int> operand_values(const Instruction& inst) const;

  // The handlers (split over the files as this file's comment says); lower_computation gives
  // an op that computes its value first. A false return names the op in the CompileError
  // (with why_, when set).
  KILN_LOWERING_VISITOR_OVERRIDES

  // `inst` alone (wrapped) as a loop kernel: elementwise ops, iota and the views.
  bool add_op_loop(const Instruction& inst);

  // A computation holding just `inst` over fresh parameters, so single ops and fusions share
  // the loop path.
  const ir::Computation* wrap(const Instruction& inst);

  // A step's run that copies `bytes` of its read into its write.
  static auto copy_run(size_t bytes) {
    return [bytes](CUstream s, const CUdeviceptr* in, const CUdeviceptr* out, CUdeviceptr) {
      if (bytes > 0) check(driver().cuMemcpyDtoDAsync(out[0], in[0], bytes, s), "cuMemcpyDtoDAsync");
    };
  }

  bool add_copy(const Instruction& inst, const char* label);

  // The operand copied into the result, then reduced there in place with the other replicas
  // by NCCL, on the compute stream. Several replicas need the NCCL collectives of GPU
  // replicas (make_nccl_collectives); host collectives cannot reach device memory.
  bool add_nccl_all_reduce(const Instruction& inst);
  // The replicas a collective meets (1 without collectives), its groups checked against them
  // (CompileError).
  int64_t collective_replicas(const Instruction& inst) const;
  // The NCCL collectives of this replica for `inst`, or null with why_ set (host collectives,
  // replica groups, another GPU).
  NcclCollectives* nccl_for(const Instruction& inst);
  // A step queueing `run(nccl, stream, in, out)` on the compute stream, reading the operand and
  // writing the result, checked for an abort once the GPU work ended.
  void add_nccl_step(const Instruction& inst, std::string label, NcclCollectives* nccl,
                     std::function<void(CUstream, CUdeviceptr in, CUdeviceptr out)> run);

  // A matmul on cuBLASLt: `dot` itself, or the contraction of the output fusion `inst`, whose
  // bias and relu epilogues cuBLASLt applies (not over a batch: the bias would need a batch
  // stride). An epilogue it has no form for (tanh, logistic, exp, ..., a dtype change) runs
  // after the plain matmul as one loop kernel. An empty sum (k = 0) is zeros, by a memset.
  bool add_matmul(const Instruction& inst, const Instruction& dot, bool bias, compiler::EpilogueActivation act);

  // The value operand `i` of `contraction` reads: `inst`'s own operand, or (`inst` an output
  // fusion) the fusion operand its body parameter stands for.
  int contraction_operand(const Instruction& inst, const Instruction& contraction, size_t i) const;

  // A convolution op through cuDNN (`conv` is `inst`, or the contraction of the output fusion
  // `inst`). cuDNN's NHWC filters are KRSC, Kiln's HWIO: a filter operand is transposed before
  // the call and a filter gradient after it, by loop kernels. Padding cuDNN cannot express
  // (more on one side) is a padded copy of x before the call (add_spatial_pad) and, for a data
  // gradient, a slice loop kernel after it (see ConvGeometry). A fusion's epilogue (bias, activation) runs after it as one
  // loop kernel.
  bool add_convolution(const Instruction& inst, const Instruction& conv);

  // `source` (of `shape`) transposed by `permutation` into `dest` (a new value when -1), by a
  // loop kernel; the value id, or -1 when the code generator cannot build the loop.
  int add_transpose(int source, const Shape& shape, const Dims& permutation, int dest, const std::string& prefix);

  // `source` (NHWC, dims `from`) into a new value of dims `to`, shifted by low[1] rows and
  // low[2] columns, the rest 0 or (`lowest`) -inf: a memset and one 3D copy (N planes of H
  // rows) on the compute stream. These two calls move each byte once more than the generated
  // pad kernel (add_index_op) would, at copy bandwidth; not switched to it yet.
  int add_spatial_pad(int source, DType t, const Dims& from, const Dims& to, const Dims& low, bool lowest);

  // make(builder, p) over `source` (of `shape`, as parameter p) into `dest` (a new value when
  // -1), by a loop kernel; the value id, or -1 when the code generator cannot build the loop.
  int add_rewrite(int source, const Shape& shape, const std::function<Instruction*(ir::Builder&, Instruction*)>& make,
                  int dest, const std::string& prefix);

  // The output fusion's body with its contraction replaced by a parameter reading
  // `contraction_value`, as loop kernels into the fusion's value.
  bool add_epilogue(const Instruction& fusion, const Instruction& contraction, int contraction_value);

  // reduce_window(x) -> y and reduce_window_grad(x, dy) -> dx through cuDNN's pooling. The max
  // gradient needs the forward's y too (cuDNN finds each window's maximum by comparing x with
  // it), so it runs the forward into a scratch value first; the mean gradient reads neither.
  bool add_pooling(const Instruction& inst);

  // `reduce` (the instruction itself, or the root of a reduction fusion's body): its producer
  // as a loop into a scratch value (unless it is an operand as it is), then a reduction kernel
  // over the input viewed as [outer, r, inner], its layout chosen by ReductionPlan. Axes that
  // are not consecutive (reduce_sum(x, {0, 2})) are made so by a transpose loop kernel first,
  // which moves the reduced axes last: [kept..., reduced...], so inner is 1.
  bool add_reduction(const Instruction& inst, const Instruction& reduce);

  // The CPU's Philox stream (kiln/core/rng.h): element i of the result is the same 32 bits on
  // every backend, so dropout masks match.
  bool add_rng_bits(const Instruction& inst);

  // pad, concatenate, gather and dynamic_slice: one generated kernel (IndexKernelUnit), a
  // thread per result element. scatter_add and dynamic_update_slice copy x into the result,
  // then a thread per update element stores (scatter_add: adds atomically) into it; 8- and
  // 16-bit scatter_adds accumulate in a 32-bit copy (codegen::scatter_accumulator) that loop
  // kernels widen and narrow. Kernels read dynamic starts on the GPU, so the host never waits.
  bool add_index_op(const Instruction& inst);

  // `unit` (computing `inst`) over the values `reads` (its pointers but the last) into `dest`.
  void add_index_kernel(const Instruction& inst, const codegen::IndexKernelUnit& unit, const std::vector<int>& reads,
                        int dest);

  // A nested computation (a while's condition or body, a branch) lowered as the CPU compiles
  // it: a program of its own through the pass pipeline, then lowered here into `list`, with
  // its parameters bound to `params` and its kernels in the program's PTX module (symbols
  // prefixed "n<k>_", so they stay unique). Its output values are `outs`; values created from
  // `owned_from` on are its own.
  struct Nested {
    std::vector<int> outs;
    int owned_from = 0;
  };
  Nested lower_nested(const ir::Computation& c, const std::vector<int>& params, std::vector<CudaStep>& list);
  std::shared_ptr<ir::Module> optimized(const ir::Computation& c);
  Nested lower_nested(const ir::Module& m, const std::vector<int>& params, std::vector<CudaStep>& list);

  // Whether `n`'s output k may trade buffers with a value outside it instead of being copied:
  // a value its own steps compute (no parameter, literal or outer value) that no other output is.
  bool swappable(const Nested& n, size_t k) const;

  // Value `from` copied into a new value at the end of `list`; the new value's id.
  int add_copy_step(int from, std::vector<CudaStep>& list);

  // 8 bytes of page-locked host memory a predicate or selector is read into (null in a dry run).
  std::shared_ptr<void> pinned_scalar();

  // while: a carried value the body changes (variant) has a value of its own, copied from the
  // operand once per run and then traded, buffer for buffer, with the body's new value after
  // each iteration (ping-pong: nothing is copied). A value the body passes through (a scan's
  // xs, captured weights) stays the operand's value for the whole loop.
  // With trip_count >= 0 (the tracer knows it: scans) the body runs that many times and the
  // condition is never evaluated: the GPU trusts the tracer's trip_count, where the CPU
  // evaluates the condition anyway and checks the count (a bug check). Otherwise the
  // condition runs on the GPU and its predicate is read to the host per iteration.
  void add_while(const Instruction& loop);

  // conditional: the selector is read to the host (i32 out of range picks the last branch; a
  // bool picks branch 0 when true, as the reference evaluator), then the branch's steps run
  // over the operands' values (a branch only reads them) and its results become the
  // conditional's: by trading buffers where the branch computed them, else by a copy.
  void add_conditional(const Instruction& cond);

  // One step per stage of the loop's LoopIr: inner stages write scratch values that later
  // stages load; literals are uploaded once, here.
  bool add_loop(const Instruction& inst, const Instruction& root);

  // `root`'s value (its leaves are parameters standing for `operands`) into value `dest`.
  bool add_loop(const std::vector<int>& operands, const Instruction& root, int dest, const std::string& prefix);

  // Generates (or reads from the kernel cache) one PTX module for every loop of the program
  // and finds each kernel in it.
  void load_kernels();

  CudaExecutable& exe_;
  CudaDevice* device_;
  int compute_capability_;
  const runtime::CompileOptions& options_;
  std::string label_;
  compiler::AcceptAllTarget target_;  // the backend's, for the nested programs' passes
  std::shared_ptr<ir::Module> scratch_;
  std::unordered_map<const Instruction*, int> value_;
  std::deque<codegen::LoopIr> irs_;  // stable addresses for units_
  std::vector<codegen::LoopUnit> units_;
  std::vector<codegen::GpuKernelUnit> gpu_kernels_;
  std::vector<codegen::IndexKernelUnit> index_kernels_;
  std::vector<std::shared_ptr<KernelRef>> kernels_;
  std::string ptx_;
  std::string why_;  // set by a handler when it cannot lower an op it knows, for the CompileError
  std::map<std::string, int> missing_;  // op (and why) -> count, nested programs' included
  std::vector<CudaStep>* sink_ = nullptr;  // where steps go: a nested list, or (null) the program
  const std::vector<int>* bound_ = nullptr;  // the values of the computation's parameters (null: the entry's)
  std::string sym_;  // kernel symbol prefix: "" in the entry, "n<k>_" in nested program k
  int nested_programs_ = 0;
  std::unordered_set<int> constants_;  // value ids of uploaded literals
  std::unordered_map<const Instruction*, std::vector<int>> tuple_values_;  // a while's or conditional's results
  std::unordered_map<const Instruction*, int> in_place_;  // a body's dynamic_update_slice -> its carried value
};

}  // namespace kiln::cuda::lowering
