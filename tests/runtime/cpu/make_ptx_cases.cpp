// make_ptx_cases <dir> [count]: writes GPU test cases of the code generator's NVPTX path. Each
// case is a random fused loop (tests/testing/random_loop_body.h) compiled to PTX by the same
// emitter as the CPU kernels, with its inputs and the interpreter's output:
//   <dir>/case_<i>/kernel.ptx, load_<k>.bin (the bytes load k reads), expected.bin, meta.txt
// meta.txt: "kernel <name>", "elements <n>", "dtype <out dtype>", "loads <k>", "exact 0|1"
// (1: only IEEE-exact ops, so the GPU must give the interpreter's bytes; 0: libdevice's math
// functions differ from glibc's in the last bits). run_ptx_cases.cpp runs them on a GPU; the
// device machine has no LLVM, so the PTX is made here (as a kernel cache would ship it).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "kiln/compiler/codegen/llvm_codegen.h"
#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/ir/module.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "tests/testing/random_loop_body.h"

namespace {

using namespace kiln;

void write(const std::string& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

// Whether every op is exact on every device: the elementwise table's exactness column
// (ir/elementwise.def) and the register ops' (loop_ir.h) say which call libm.
bool exact_only(const codegen::LoopIr& ir) {
  for (const codegen::LoopStage& st : ir.stages)
    for (const codegen::LoopInstr& in : st.code)
      if (codegen::loop_op_info(in.op).exactness == ir::elementwise::Exactness::kLibm) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_ptx_cases <dir> [count]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int count = argc > 2 ? std::atoi(argv[2]) : 60;
  const char* libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  std::filesystem::create_directories(dir);
  std::mt19937 rng(20261204);
  static const DType kOut[] = {DType::kF32, DType::kF32, DType::kF64, DType::kBF16, DType::kF16,
                               DType::kI32, DType::kU8, DType::kBool};
  int written = 0, large_cases = 0;
  for (int trial = 0; written < count && trial < count * 20; ++trial) {
    ir::Module module("case");
    ir::Computation* c = module.add_computation("body");
    ir::Builder b(c);
    std::vector<HostTensor> args;
    Dims dims = testing::random_dims(rng);
    const bool large = trial % 16 == 0 && large_cases < 3;  // a few, for throughput
    if (large) dims = {512, 1024};
    ir::Instruction* root = testing::RandomBody(rng, b, dims).build(std::uniform_int_distribution<int>(1, 8)(rng), args);
    const DType out = kOut[trial % 8];
    if (out != DType::kF32) root = b.convert(root, out);
    c->add_output(root);
    std::optional<codegen::LoopIr> ir = codegen::LoopIr::build(*root);
    if (!ir || ir->stages.size() != 1) continue;  // inner stages need scratch: CPU-tested only
    if (large && ir->stages[0].loads.size() > 3) continue;  // keeps the cases small enough to carry
    large_cases += large;
    const std::string case_dir = str_cat(dir, "/case_", written);
    std::filesystem::create_directories(case_dir);
    codegen::GeneratedCode ptx = codegen::generate_loop_code({{&*ir, str_cat("case", written), false}},
                                                              codegen::CodegenTarget::nvptx(90), false, libdevice);
    std::ofstream(case_dir + "/kernel.ptx") << ptx.binary;
    const codegen::LoopStage& st = ir->stages[0];
    for (size_t k = 0; k < st.loads.size(); ++k) {
      const codegen::LoopLoad& l = st.loads[k];
      const HostTensor& src = l.kind == codegen::LoopLoad::kParameter ? args[static_cast<size_t>(l.index)]
                                                                       : ir->literals[static_cast<size_t>(l.index)];
      write(str_cat(case_dir, "/load_", k, ".bin"), src.raw_data(), static_cast<size_t>(src.byte_size()));
    }
    auto kernel = cpu::LoopKernel::create(*c, cpu::LoopEngine::kInterpreter);
    std::vector<const void*> in;
    for (const HostTensor& a : args) in.push_back(a.raw_data());
    HostTensor expected(root->shape());
    kernel->run(in.data(), expected.raw_data());
    write(case_dir + "/expected.bin", expected.raw_data(), static_cast<size_t>(expected.byte_size()));
    std::ofstream(case_dir + "/meta.txt") << "kernel " << codegen::stage_symbol(str_cat("case", written), 0) << "\n"
                                          << "elements " << root->shape().num_elements() << "\n"
                                          << "dtype " << name(out) << "\n"
                                          << "loads " << st.loads.size() << "\n"
                                          << "exact " << exact_only(*ir) << "\n"
                                          << "shape " << root->shape().to_string() << "\n";
    ++written;
  }
  std::printf("make_ptx_cases: %d cases in %s\n", written, dir.c_str());
  return written == count ? 0 : 1;
}
