// The loop-fusion interpreter. A body becomes one or more stages; a stage is a flat register
// program over one index space (its shape). Values a broadcast reads that are computed inside
// the body (not parameters or constants) get a stage of their own, materialized first.
// Registers hold float, or double when the body touches f64 or i64 (integer ops are exact
// below 2^24 in float, 2^53 in double). The executor (loop_kernel_exec.inc) is compiled for the
// build's baseline and for x86-64-v4, and each kernel runs the variant its CPU supports.
#include "kiln/runtime/cpu/loop_kernel.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "kiln/core/check.h"
#include "kiln/core/dtype_dispatch.h"
#include "kiln/ir/instruction.h"
#include "kiln/runtime/cpu/cpu_isa_impl.h"
#include "kiln/runtime/cpu/team.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kChunk = 256;              // elements per register: 1 KiB of f32

enum class Op : uint8_t {
  kLoad, kSplat, kIota,
  kNeg, kAbs, kSign, kExp, kLog, kLog1p, kTanh, kLogistic, kSqrt, kRsqrt, kErf,
  kCopy, kTrunc, kToBool, kRoundF32, kRoundBF16, kRoundF16,
  kAdd, kSub, kMul, kDiv, kDivInt, kPow, kMax, kMin,
  kEq, kNe, kLt, kLe, kGt, kGe,
  kSelect,
};

// Where a load reads: a body parameter, an earlier stage's result, or a constant literal.
struct Load {
  enum Kind { kParameter, kStage, kLiteral } kind;
  int index;      // parameter index, stage index, or literal index
  DType dtype;
  Dims strides;   // per dim of the stage shape; 0 where broadcast
  bool contiguous;
  int64_t offset = 0;  // element offset of index 0 in the source (slices)
};

struct Instr {
  Op op;
  int dst = 0, a = 0, b = 0, c = 0;
  double value = 0;      // kSplat; a binary op's second operand when b_is_scalar
  bool b_is_scalar = false;  // a binary op whose second operand is the constant `value`
  int load = -1;         // kLoad
  int64_t div = 1, mod = 1;  // kIota: (i / div) % mod
};

struct Stage {
  Shape shape;
  std::vector<Instr> code;
  std::vector<Load> loads;
  int num_registers = 0;
  int result = 0;
};

Dims contiguous_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 1) s[i] = 0;  // a size-1 dim never moves the offset
  return s;
}

bool is_contiguous(const Dims& strides, const Dims& dims) {
  Dims c = contiguous_strides(dims);
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1 && strides[i] != c[i]) return false;
  return true;
}

// The executor's entry points in one ISA variant (loop_kernel_exec.inc, cpu_isa_impl.h).
struct LoopKernels {
  void (*eval_f32)(const Stage&, const void* const* srcs, int64_t base, int64_t n, float* regs);
  void (*eval_f64)(const Stage&, const void* const* srcs, int64_t base, int64_t n, double* regs);
  void (*store_f32)(DType, void* out, int64_t base, int64_t n, const float* src);
  void (*store_f64)(DType, void* out, int64_t base, int64_t n, const double* src);
};

}  // namespace

class LoopProgram {
 public:
  std::vector<Stage> stages;  // the last one computes the result
  std::vector<HostTensor> literals;
  bool use_double = false;
  const LoopKernels* kernels = nullptr;  // the variant for this CPU, chosen at creation

  template <typename T>
  void eval_chunk(const Stage& st, const void* const* srcs, int64_t base, int64_t n, T* regs) const;
  template <typename T>
  void stage_work(const Stage& st, const void* const* srcs, void* out) const;
  void prepare_team(const void* const* inputs, LoopRun& run) const;
  void run_team(const void* const* inputs, void* out, LoopRun& run) const;
  template <typename T, typename R>
  void read(const LoopRun& run, int64_t base, int64_t n, T* dst, std::vector<R>& regs) const;
};

namespace {

// Builds stages from a body. Returns false for an op a loop kernel cannot run.
class StageBuilder {
 public:
  explicit StageBuilder(LoopProgram& p) : p_(p) {}

  bool build_stage(const ir::Instruction* root, int* stage_index) {
    Stage st;
    st.shape = root->shape();
    std::unordered_map<const ir::Instruction*, int> regs;
    bool ok = emit(root, st, regs, &st.result);
    if (!ok) return false;
    allocate_registers(st);
    p_.stages.push_back(std::move(st));
    *stage_index = static_cast<int>(p_.stages.size()) - 1;
    return true;
  }

 private:
  // A source viewed over `inst`'s own shape: where it lives and its strides.
  bool source_of(const ir::Instruction* inst, Load* load) {
    using ir::Opcode;
    switch (inst->opcode()) {
      case Opcode::kParameter:
        *load = {Load::kParameter, static_cast<int>(inst->attrs().parameter_index), inst->dtype(),
                 contiguous_strides(inst->shape().dims()), true};
        return true;
      case Opcode::kConstant:
        p_.literals.push_back(inst->attrs().literal);
        *load = {Load::kLiteral, static_cast<int>(p_.literals.size()) - 1, inst->dtype(),
                 contiguous_strides(inst->shape().dims()), true};
        return true;
      case Opcode::kReshape: {
        Load inner;
        if (!source_of(inst->operand(0), &inner)) return false;
        if (!is_contiguous(inner.strides, inst->operand(0)->shape().dims())) return false;
        // (a contiguous view keeps its offset: reshaping it only renames the dims)
        inner.strides = contiguous_strides(inst->shape().dims());
        *load = inner;
        return true;
      }
      case Opcode::kTranspose: {  // a strided view: result dim i walks operand dim perm[i]
        Load inner;
        if (!source_of(inst->operand(0), &inner)) return false;
        Dims strides;
        for (int64_t p : inst->attrs().dims) strides.push_back(inner.strides[static_cast<size_t>(p)]);
        inner.strides = std::move(strides);
        *load = inner;
        return true;
      }
      case Opcode::kSlice: {  // a strided view starting at the slice's origin
        Load inner;
        if (!source_of(inst->operand(0), &inner)) return false;
        const ir::Attrs& a = inst->attrs();
        for (size_t i = 0; i < inner.strides.size(); ++i) {
          inner.offset += a.starts[i] * inner.strides[i];
          inner.strides[i] *= a.strides[i];
        }
        *load = inner;
        return true;
      }
      case Opcode::kBroadcastInDim: {
        Load inner;
        const ir::Instruction* x = inst->operand(0);
        if (!source_of(x, &inner)) {
          int stage;
          if (!build_stage(x, &stage)) return false;
          inner = {Load::kStage, stage, x->dtype(), contiguous_strides(x->shape().dims()), true};
        }
        Dims strides(static_cast<size_t>(inst->shape().rank()), 0);
        const Dims& map = inst->attrs().dims;
        for (size_t i = 0; i < map.size(); ++i)
          if (x->shape().dims()[i] != 1) strides[static_cast<size_t>(map[i])] = inner.strides[i];
        inner.strides = std::move(strides);
        *load = inner;
        return true;
      }
      default:
        return false;
    }
  }

  int new_register(Stage& st) { return st.num_registers++; }

  // The value of a one-element constant, directly or broadcast (a scalar operand).
  static std::optional<double> constant_scalar(const ir::Instruction* inst) {
    while (inst->opcode() == ir::Opcode::kBroadcastInDim || inst->opcode() == ir::Opcode::kReshape)
      inst = inst->operand(0);
    if (inst->opcode() != ir::Opcode::kConstant || inst->shape().num_elements() != 1) return std::nullopt;
    return visit_dtype(inst->dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      return to_double(*static_cast<const S*>(inst->attrs().literal.raw_data()));
    });
  }

  bool emit(const ir::Instruction* inst, Stage& st, std::unordered_map<const ir::Instruction*, int>& regs,
            int* out) {
    if (auto it = regs.find(inst); it != regs.end()) {
      *out = it->second;
      return true;
    }
    using ir::Opcode;
    Instr in{};
    Load load;
    const Opcode opc = inst->opcode();
    if (opc == Opcode::kConstant && inst->shape().num_elements() == 1) {
      in.op = Op::kSplat;
      in.value = visit_dtype(inst->dtype(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        return to_double(*static_cast<const S*>(inst->attrs().literal.raw_data()));
      });
    } else if (opc == Opcode::kIota) {
      in.op = Op::kIota;
      size_t axis = static_cast<size_t>(inst->attrs().dims[0]);
      const Dims& d = inst->shape().dims();
      in.mod = d[axis];
      for (size_t i = axis + 1; i < d.size(); ++i) in.div *= d[i];
    } else if (source_of(inst, &load)) {
      bool scalar = std::all_of(load.strides.begin(), load.strides.end(), [](int64_t s) { return s == 0; });
      load.contiguous = !scalar && is_contiguous(load.strides, st.shape.dims());
      if (scalar) load.strides.assign(load.strides.size(), 0);
      st.loads.push_back(load);
      in.op = Op::kLoad;
      in.load = static_cast<int>(st.loads.size()) - 1;
    } else if (ir::is_elementwise(opc)) {
      if (inst->shape().dims() != st.shape.dims()) return false;
      // Float registers hold an f32 exactly: converting to f32 is then the value itself.
      if (opc == Opcode::kConvert && inst->dtype() == DType::kF32 && !p_.use_double)
        return emit(inst->operand(0), st, regs, out) && (regs[inst] = *out, true);
      // A constant second operand of a binary op is read as a scalar, not filled per chunk.
      std::optional<double> scalar_b;
      if (inst->operand_count() == 2 && (ir::opcode_family(opc) == ir::OpFamily::Binary ||
                                         ir::opcode_family(opc) == ir::OpFamily::Compare))
        scalar_b = constant_scalar(inst->operand(1));
      int operand_regs[3] = {0, 0, 0};
      for (size_t i = 0; i < inst->operand_count(); ++i) {
        if (i == 1 && scalar_b) continue;
        if (!emit(inst->operand(i), st, regs, &operand_regs[i])) return false;
      }
      in.a = operand_regs[0];
      in.b = scalar_b ? operand_regs[0] : operand_regs[1];
      in.c = operand_regs[2];
      if (scalar_b) {
        in.b_is_scalar = true;
        in.value = *scalar_b;
      }
      if (!select_op(inst, &in.op)) return false;
    } else {
      return false;
    }
    in.dst = new_register(st);
    st.code.push_back(in);
    regs[inst] = in.dst;
    *out = in.dst;
    return true;
  }

  static bool select_op(const ir::Instruction* inst, Op* op) {
    using ir::Opcode;
    const DType out = inst->dtype();
    switch (inst->opcode()) {
      case Opcode::kNeg: *op = Op::kNeg; return true;
      case Opcode::kAbs: *op = Op::kAbs; return true;
      case Opcode::kSign: *op = Op::kSign; return true;
      case Opcode::kExp: *op = Op::kExp; return true;
      case Opcode::kLog: *op = Op::kLog; return true;
      case Opcode::kLog1p: *op = Op::kLog1p; return true;
      case Opcode::kTanh: *op = Op::kTanh; return true;
      case Opcode::kLogistic: *op = Op::kLogistic; return true;
      case Opcode::kSqrt: *op = Op::kSqrt; return true;
      case Opcode::kRsqrt: *op = Op::kRsqrt; return true;
      case Opcode::kErf: *op = Op::kErf; return true;
      case Opcode::kConvert:
        // Round to what the target type can hold, so later ops see the converted value.
        switch (out) {
          case DType::kBool: *op = Op::kToBool; return true;
          case DType::kBF16: *op = Op::kRoundBF16; return true;
          case DType::kF16: *op = Op::kRoundF16; return true;
          case DType::kF32: *op = Op::kRoundF32; return true;
          case DType::kF64: *op = Op::kCopy; return true;
          case DType::kI32: case DType::kI64: case DType::kU8: *op = Op::kTrunc; return true;
        }
        return false;
      case Opcode::kAdd: *op = Op::kAdd; return true;
      case Opcode::kSub: *op = Op::kSub; return true;
      case Opcode::kMul: *op = Op::kMul; return true;
      case Opcode::kDiv: *op = is_floating(out) ? Op::kDiv : Op::kDivInt; return true;
      case Opcode::kPow: *op = Op::kPow; return true;
      case Opcode::kMax: *op = Op::kMax; return true;
      case Opcode::kMin: *op = Op::kMin; return true;
      case Opcode::kSelect: *op = Op::kSelect; return true;
      case Opcode::kCompare:
        switch (inst->attrs().comparison) {
          case ir::Comparison::kEq: *op = Op::kEq; return true;
          case ir::Comparison::kNe: *op = Op::kNe; return true;
          case ir::Comparison::kLt: *op = Op::kLt; return true;
          case ir::Comparison::kLe: *op = Op::kLe; return true;
          case ir::Comparison::kGt: *op = Op::kGt; return true;
          case ir::Comparison::kGe: *op = Op::kGe; return true;
        }
        return false;
      default:
        return false;
    }
  }

  static int reads(const Instr& in) {
    if (in.b_is_scalar) return 1;
    switch (in.op) {
      case Op::kLoad: case Op::kSplat: case Op::kIota: return 0;
      case Op::kSelect: return 3;
      case Op::kAdd: case Op::kSub: case Op::kMul: case Op::kDiv: case Op::kDivInt: case Op::kPow:
      case Op::kMax: case Op::kMin: case Op::kEq: case Op::kNe: case Op::kLt: case Op::kLe:
      case Op::kGt: case Op::kGe: return 2;
      default: return 1;
    }
  }

  // Linear-scan register reuse: a register is free once its last reader has run. A result may
  // take an operand's register (elementwise loops read and write the same index).
  static void allocate_registers(Stage& st) {
    const size_t nv = static_cast<size_t>(st.num_registers);
    std::vector<int> last_use(nv, -1);
    for (size_t i = 0; i < st.code.size(); ++i) {
      const Instr& in = st.code[i];
      const int ops[3] = {in.a, in.b, in.c};
      for (int k = 0; k < reads(in); ++k) last_use[static_cast<size_t>(ops[k])] = static_cast<int>(i);
    }
    last_use[static_cast<size_t>(st.result)] = static_cast<int>(st.code.size());
    std::vector<int> physical(nv, -1);
    std::vector<bool> freed(nv, false);
    std::vector<int> free_list;
    int count = 0;
    for (size_t i = 0; i < st.code.size(); ++i) {
      Instr& in = st.code[i];
      int* ops[3] = {&in.a, &in.b, &in.c};
      const int n = reads(in);
      int virt[3] = {in.a, in.b, in.c};
      for (int k = 0; k < n; ++k) *ops[k] = physical[static_cast<size_t>(virt[k])];
      for (int k = 0; k < n; ++k) {
        size_t v = static_cast<size_t>(virt[k]);
        if (last_use[v] == static_cast<int>(i) && !freed[v]) {
          freed[v] = true;
          free_list.push_back(physical[v]);
        }
      }
      int phys = free_list.empty() ? count++ : free_list.back();
      if (!free_list.empty() && phys == free_list.back()) free_list.pop_back();
      physical[static_cast<size_t>(in.dst)] = phys;
      in.dst = phys;
    }
    st.result = physical[static_cast<size_t>(st.result)];
    st.num_registers = count;
  }

  LoopProgram& p_;
};

}  // namespace

// The executor, compiled once per ISA variant; the dispatch is per chunk (256 elements).
namespace {
namespace isa_baseline {
#include "kiln/runtime/cpu/loop_kernel_exec.inc"
}  // namespace isa_baseline
#if KILN_ISA_HAVE_V4
KILN_ISA_V4_BEGIN
namespace isa_v4 {
#include "kiln/runtime/cpu/loop_kernel_exec.inc"
}  // namespace isa_v4
KILN_ISA_V4_END
#endif

const LoopKernels* loop_kernels_for(CpuIsa isa) {
#if KILN_ISA_HAVE_V4
  if (isa == CpuIsa::kV4) return &isa_v4::kKernels;
#endif
  (void)isa;
  return &isa_baseline::kKernels;
}

}  // namespace

template <typename T>
void LoopProgram::eval_chunk(const Stage& st, const void* const* srcs, int64_t base, int64_t n, T* regs) const {
  if constexpr (std::is_same_v<T, float>) kernels->eval_f32(st, srcs, base, n, regs);
  else kernels->eval_f64(st, srcs, base, n, regs);
}

// Team work: every thread calls it; chunks are shared out by the orphaned `omp for`.
template <typename T>
void LoopProgram::stage_work(const Stage& st, const void* const* srcs, void* out) const {
  const int64_t total = st.shape.num_elements();
  const int64_t chunks = (total + kChunk - 1) / kChunk;
  const DType out_dtype = st.shape.dtype();
  std::vector<T> regs(static_cast<size_t>(std::max(st.num_registers, 1)) * kChunk);
#pragma omp for schedule(static)
  for (int64_t ci = 0; ci < chunks; ++ci) {
    const int64_t base = ci * kChunk;
    const int64_t n = std::min(kChunk, total - base);
    eval_chunk<T>(st, srcs, base, n, regs.data());
    if constexpr (std::is_same_v<T, float>) kernels->store_f32(out_dtype, out, base, n, regs.data() + st.result * kChunk);
    else kernels->store_f64(out_dtype, out, base, n, regs.data() + st.result * kChunk);
  }
}

void LoopProgram::prepare_team(const void* const* inputs, LoopRun& run) const {
#pragma omp single
  {  // one thread lays out where every load reads and allocates the inner stages' values
    run.scratch.assign(stages.size(), HostTensor());
    run.srcs.assign(stages.size(), {});
    for (size_t s = 0; s < stages.size(); ++s) {
      for (const Load& l : stages[s].loads) {
        switch (l.kind) {
          case Load::kParameter: run.srcs[s].push_back(inputs[l.index]); break;
          case Load::kStage: run.srcs[s].push_back(run.scratch[static_cast<size_t>(l.index)].raw_data()); break;
          case Load::kLiteral: run.srcs[s].push_back(literals[static_cast<size_t>(l.index)].raw_data()); break;
        }
      }
      if (s + 1 < stages.size()) run.scratch[s] = HostTensor(stages[s].shape);
    }
  }
  for (size_t s = 0; s + 1 < stages.size(); ++s) {  // inner stages: values broadcasts read
    if (use_double) stage_work<double>(stages[s], run.srcs[s].data(), run.scratch[s].raw_data());
    else stage_work<float>(stages[s], run.srcs[s].data(), run.scratch[s].raw_data());
  }
}

void LoopProgram::run_team(const void* const* inputs, void* out, LoopRun& run) const {
  prepare_team(inputs, run);
  if (use_double) stage_work<double>(stages.back(), run.srcs.back().data(), out);
  else stage_work<float>(stages.back(), run.srcs.back().data(), out);
}

template <typename T, typename R>
void LoopProgram::read(const LoopRun& run, int64_t base, int64_t n, T* dst, std::vector<R>& regs) const {
  const Stage& st = stages.back();
  regs.resize(static_cast<size_t>(std::max(st.num_registers, 1)) * kChunk);
  for (int64_t done = 0; done < n; done += kChunk) {
    const int64_t len = std::min(kChunk, n - done);
    eval_chunk<R>(st, run.srcs.back().data(), base + done, len, regs.data());
    const R* result = regs.data() + st.result * kChunk;
    for (int64_t j = 0; j < len; ++j) dst[done + j] = static_cast<T>(result[j]);
  }
}

LoopKernel::LoopKernel(std::unique_ptr<LoopProgram> program) : program_(std::move(program)) {}
LoopKernel::~LoopKernel() = default;

std::unique_ptr<LoopKernel> LoopKernel::create(const ir::Computation& body) {
  KILN_CHECK(body.outputs().size() == 1, "loop body ", body.name(), " must have one output");
  return create_for(*body.outputs()[0]);
}

std::unique_ptr<LoopKernel> LoopKernel::create_for(const ir::Instruction& root) {
  auto program = std::make_unique<LoopProgram>();
  program->kernels = loop_kernels_for(cpu_isa());
  for (const ir::Instruction* inst : root.parent()->post_order())
    if (inst->dtype() == DType::kF64 || inst->dtype() == DType::kI64) program->use_double = true;
  StageBuilder builder(*program);
  int stage;
  if (!builder.build_stage(&root, &stage)) return nullptr;
  return std::unique_ptr<LoopKernel>(new LoopKernel(std::move(program)));
}

void LoopKernel::run(const void* const* inputs, void* out) const {
  run_on_team(work() >= kParallelThreshold, [&] { run_team(inputs, out); });
}

void LoopKernel::run_team(const void* const* inputs, void* out) const { program_->run_team(inputs, out, run_); }

void LoopKernel::prepare_team(const void* const* inputs) const { program_->prepare_team(inputs, run_); }

int64_t LoopKernel::work() const { return program_->stages.back().shape.num_elements(); }

const Shape& LoopKernel::shape() const { return program_->stages.back().shape; }

template <typename T>
void LoopKernel::read(int64_t base, int64_t n, T* dst, LoopScratch& scratch) const {
  if (program_->use_double) program_->read<T, double>(run_, base, n, dst, scratch.f64);
  else program_->read<T, float>(run_, base, n, dst, scratch.f32);
}

template void LoopKernel::read<float>(int64_t, int64_t, float*, LoopScratch&) const;
template void LoopKernel::read<double>(int64_t, int64_t, double*, LoopScratch&) const;

}  // namespace kiln::cpu
