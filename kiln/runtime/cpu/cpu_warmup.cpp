#include "kiln/runtime/cpu/cpu_warmup.h"

#include <dnnl.hpp>
#include <omp.h>

#include <atomic>
#include <string>

#include "kiln/compiler/codegen/llvm_codegen.h"
#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/core/error.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/runtime/cpu/cpu_jit.h"

namespace kiln::cpu {
namespace {

// The first sgemm of a process generates every kernel variant, whatever its shape.
void warm_onednn_gemm() {
  using dnnl::memory;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const memory::desc md({64, 64}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), engine);
  if (std::string(pd.impl_info_str()).rfind("gemm:jit", 0) != 0) return;  // brgemm: generated per primitive
  float a[64] = {}, b[64] = {}, c[64] = {};
  dnnl_sgemm('N', 'N', 8, 8, 8, 1.0f, a, 8, b, 8, 0.0f, c, 8);
}

// One small kernel through LLVM's whole pipeline (compiled, not kept).
void warm_code_generator(const CpuJit& jit) {
  ir::Module m("warmup");
  ir::Builder b(m.entry());
  ir::Instruction* x = b.parameter(Shape(DType::kF32, {64}), "x");
  ir::Instruction* y =
      b.binary(ir::Opcode::kAdd, b.unary(ir::Opcode::kExp, x), b.convert(b.convert(x, DType::kBF16), DType::kF32));
  std::optional<codegen::LoopIr> ir = codegen::LoopIr::build(*y);
  if (!ir) return;
  codegen::generate_loop_code({{&*ir, "kiln_warmup", false}}, jit.target(), /*with_text=*/false);
}

// What it warms is the process's (oneDNN's kernels, LLVM's code, the JIT session): the first
// backend of a process warms it, the others have nothing left to do.
std::atomic<bool> started{false};

}  // namespace

CpuWarmup::CpuWarmup(bool code_generator) {
  if (started.exchange(true)) return;
  thread_ = std::thread([code_generator] {
    omp_set_num_threads(1);  // this thread's own setting: no OpenMP team for it
    try {
      // In the order a step needs them: the JIT session loads kernels before the matmuls
      // run, and LLVM only compiles where the disk cache has nothing.
      const CpuJit* jit = code_generator ? CpuJit::instance() : nullptr;
      warm_onednn_gemm();
      if (jit != nullptr) warm_code_generator(*jit);
    } catch (const dnnl::error&) {  // a warm-up only: the real first calls do it then
    } catch (const Error&) {
    }
  });
}

CpuWarmup::~CpuWarmup() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace kiln::cpu
