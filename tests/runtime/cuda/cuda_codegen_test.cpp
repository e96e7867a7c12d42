// The PTX the CUDA backend loads, checked without a GPU: CUDA's own assembler (ptxas) must
// accept the code generator's loop and reduction kernels for an H100/H200 (sm_90), so a PTX
// error shows here and not only on the device machine.
#include <gtest/gtest.h>

#include <filesystem>

#include "kiln/compiler/codegen/llvm_codegen.h"
#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/ir/builder.h"
#include "tests/testing/gpu_backend.h"
#include "tests/testing/index_op_cases.h"

namespace kiln::cuda {
namespace {

using ir::Builder;
using ir::Instruction;
using ir::Opcode;

TEST(CudaCodegenTest, PtxasAcceptsLoopReductionAndRngBitsKernels) {
  if (!std::filesystem::exists(KILN_CUDA_PTXAS)) GTEST_SKIP() << "no ptxas at " << KILN_CUDA_PTXAS;
  ir::Module module("ptx");
  ir::Computation* c = module.add_computation("body");
  Builder b(c);
  Instruction* x = b.parameter(Shape(DType::kF32, {64, 10}), "x");
  Instruction* bias = b.parameter(Shape(DType::kBF16, {10}), "bias");
  Instruction* y = b.unary(Opcode::kTanh, b.binary(Opcode::kAdd, x, b.convert(b.broadcast_in_dim(bias, {64, 10}, {1}), DType::kF32)));
  std::optional<codegen::LoopIr> loop = codegen::LoopIr::build(*y);
  ASSERT_TRUE(loop.has_value());
  const std::vector<codegen::GpuKernelUnit> kernels = {
      {"sum_f32", codegen::GpuKernelOp::kSum, DType::kF32, DType::kF32},
      {"max_bf16", codegen::GpuKernelOp::kMax, DType::kBF16, DType::kBF16},
      {"min_f64", codegen::GpuKernelOp::kMin, DType::kF64, DType::kF64},
      {"sum_i32", codegen::GpuKernelOp::kSum, DType::kI32, DType::kI32},
      {"argmax_f32", codegen::GpuKernelOp::kArgmax, DType::kF32, DType::kI32},
      {"rng", codegen::GpuKernelOp::kRngBits, DType::kI64, DType::kI32},
  };
  const codegen::GeneratedCode ptx = codegen::generate_loop_code({{&*loop, "k", false}}, codegen::CodegenTarget::nvptx(90),
                                                                 false, KILN_CUDA_LIBDEVICE, kernels);
  for (const char* entry : {".entry k_s0", ".entry sum_f32", ".entry max_bf16", ".entry min_f64", ".entry sum_i32", ".entry argmax_f32",
                            ".entry rng"})
    EXPECT_NE(ptx.binary.find(entry), std::string::npos) << entry;
  std::string log;
  EXPECT_EQ(testing::ptxas_sm90(KILN_CUDA_PTXAS, ptx.binary, log), 0) << log;
}

// Every index kernel the lowering makes (each op x dtype, random geometries: empty dims,
// negative padding, i32 and i64 indices and starts) assembles for sm_90; scatter_add's atomic
// adds among them (f32, f64, i32, i64).
TEST(CudaCodegenTest, PtxasAcceptsEveryIndexKernel) {
  if (!std::filesystem::exists(KILN_CUDA_PTXAS)) GTEST_SKIP() << "no ptxas at " << KILN_CUDA_PTXAS;
  testing::IndexOpCaseMaker maker(90);
  const std::vector<testing::IndexOpCase> cases = maker.all(/*per=*/2);
  std::vector<codegen::IndexKernelUnit> units;
  for (const testing::IndexOpCase& c : cases) units.push_back(*codegen::IndexKernelUnit::of(c.op(), str_cat("ix", units.size())));
  const codegen::GeneratedCode ptx =
      codegen::generate_loop_code({}, codegen::CodegenTarget::nvptx(90), false, KILN_CUDA_LIBDEVICE, {}, units);
  for (const codegen::IndexKernelUnit& u : units)
    EXPECT_NE(ptx.binary.find(str_cat(".entry ", u.name, "(")), std::string::npos) << u.key();
  for (const char* atomic : {"atom.global.add.f32", "atom.global.add.f64", "atom.global.add.u32", "atom.global.add.u64"})
    EXPECT_NE(ptx.binary.find(atomic), std::string::npos) << atomic;
  std::string log;
  EXPECT_EQ(testing::ptxas_sm90(KILN_CUDA_PTXAS, ptx.binary, log), 0) << log;
}

// Every reduction layout (thread per result, block per result with warp shuffles and shared
// memory, column tiles) for every op and register type (f32; f64 for f64 and i32, whose
// shuffles move two 32-bit halves; argmax with its i64 indices) and memory type.
TEST(CudaCodegenTest, PtxasAcceptsEveryReductionLayout) {
  if (!std::filesystem::exists(KILN_CUDA_PTXAS)) GTEST_SKIP() << "no ptxas at " << KILN_CUDA_PTXAS;
  std::vector<codegen::GpuKernelUnit> kernels;
  const std::pair<codegen::GpuKernelOp, const char*> ops[] = {{codegen::GpuKernelOp::kSum, "sum"},
                                                             {codegen::GpuKernelOp::kMax, "max"},
                                                             {codegen::GpuKernelOp::kMin, "min"},
                                                             {codegen::GpuKernelOp::kArgmax, "argmax"}};
  const std::pair<codegen::GpuReduction, const char*> layouts[] = {{codegen::GpuReduction::kThreadPerResult, "thread"},
                                                                  {codegen::GpuReduction::kBlockPerResult, "block"},
                                                                  {codegen::GpuReduction::kColumnTiles, "columns"}};
  for (const auto& [layout, layout_name] : layouts)
    for (const auto& [op, op_name] : ops)
      for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kI32}) {
        const DType out = op == codegen::GpuKernelOp::kArgmax ? DType::kI32 : dt;
        kernels.push_back({str_cat(op_name, "_", name(dt), "_", layout_name), op, dt, out, layout});
      }
  const codegen::GeneratedCode ptx =
      codegen::generate_loop_code({}, codegen::CodegenTarget::nvptx(90), false, KILN_CUDA_LIBDEVICE, kernels);
  for (const codegen::GpuKernelUnit& k : kernels)
    EXPECT_NE(ptx.binary.find(str_cat(".entry ", k.name, "(")), std::string::npos) << k.name;
  // The block and column layouts really cooperate: barriers, shuffles and shared memory.
  EXPECT_NE(ptx.binary.find("bar.sync"), std::string::npos);
  EXPECT_NE(ptx.binary.find("shfl.sync.down"), std::string::npos);
  EXPECT_NE(ptx.binary.find(".shared"), std::string::npos);
  std::string log;
  EXPECT_EQ(testing::ptxas_sm90(KILN_CUDA_PTXAS, ptx.binary, log), 0) << log;
}

TEST(CudaCodegenTest, ReductionKernelsAreForTheGpuOnly) {
  try {
    codegen::generate_loop_code({}, codegen::CodegenTarget::host(), false, "",
                                {{"sum", codegen::GpuKernelOp::kSum, DType::kF32, DType::kF32}});
    ADD_FAILURE() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("NVPTX only"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::cuda
