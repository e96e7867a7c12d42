// LLVM's middle and back end for generated kernels: a short function pipeline (no vectorizers:
// the emitter writes explicit vectors), then the target's code generator.
#include "kiln/compiler/codegen/llvm_codegen.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <map>
#include <memory>
#include <mutex>

#include "kiln/compiler/codegen/llvm_emitter_impl.h"
#include "kiln/compiler/codegen/source_hash.h"
#include "kiln/core/check.h"
#include "kiln/core/str_cat.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace kiln::codegen {
namespace {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

bool is_nvptx(const CodegenTarget& t) { return t.triple.rfind("nvptx", 0) == 0; }

std::unique_ptr<llvm::TargetMachine> target_machine(const CodegenTarget& t) {
  initialize_llvm();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, error);
  if (target == nullptr) KILN_THROW(CompileError, "[codegen] LLVM has no target for ", t.triple, ": ", error);
  llvm::TargetOptions options;  // no fast-math, no FMA contraction: the interpreter's IEEE ops
  options.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      t.triple, t.cpu, t.features, options, llvm::Reloc::PIC_, llvm::None, llvm::CodeGenOpt::Aggressive));
  if (tm == nullptr) KILN_THROW(CompileError, "[codegen] LLVM cannot make a target machine for ", t.triple, " ", t.cpu);
  return tm;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm, bool gpu) {
  llvm::PassBuilder pb(&tm);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  if (gpu) {  // O2: it runs NVVMReflect and inlines libdevice's functions
    pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(m, mam);
    return;
  }
  // CPU: the emitted IR is already vector code without allocas or calls to inline, so O2's
  // extra passes cost compile time (a third of it on the seed MLP) for no speed: folding, CSE,
  // CFG cleanup and hoisting of loop invariants (broadcast values, row bases) are enough.
  llvm::ModulePassManager mpm;
  if (llvm::Error e = pb.parsePassPipeline(
          mpm, "function(instcombine,early-cse,simplifycfg),function(loop-mssa(licm)),function(instcombine)"))
    KILN_THROW(CompileError, "[codegen] ", llvm::toString(std::move(e)));
  mpm.run(m, mam);
}

std::string emit(llvm::Module& m, llvm::TargetMachine& tm, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    KILN_THROW(CompileError, "[codegen] LLVM cannot emit ", type == llvm::CGFT_ObjectFile ? "objects" : "assembly",
               " for ", tm.getTargetTriple().str());
  pm.run(m);
  return std::string(buffer.data(), buffer.size());
}

void link_libdevice(llvm::Module& m, const std::string& path) {
  auto file = llvm::MemoryBuffer::getFile(path);
  if (!file) KILN_THROW(CompileError, "[codegen] cannot read CUDA's libdevice at ", path, ": ", file.getError().message());
  auto lib = llvm::parseBitcodeFile((*file)->getMemBufferRef(), m.getContext());
  if (!lib) KILN_THROW(CompileError, "[codegen] ", path, " is not LLVM bitcode: ", llvm::toString(lib.takeError()));
  (*lib)->setDataLayout(m.getDataLayout());
  (*lib)->setTargetTriple(m.getTargetTriple());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::LinkOnlyNeeded))
    KILN_THROW(CompileError, "[codegen] linking libdevice from ", path, " failed");
  // libdevice asks __nvvm_reflect whether to flush denormals: no, as on the CPU.
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  for (llvm::Function& f : m)  // only the kernels stay visible, so the rest can be inlined away
    if (!f.isDeclaration() && f.getName().startswith("__nv_")) f.setLinkage(llvm::GlobalValue::InternalLinkage);
}

}  // namespace

CodegenTarget CodegenTarget::host() {
  initialize_llvm();
  CodegenTarget t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features;
  if (llvm::sys::getHostCPUFeatures(features)) {
    std::map<std::string, bool> sorted;  // a stable order, for cache tags
    for (const auto& f : features) sorted[f.getKey().str()] = f.getValue();
    for (const auto& [name, on] : sorted) t.features += str_cat(t.features.empty() ? "" : ",", on ? "+" : "-", name);
  }
  return t;
}

CodegenTarget CodegenTarget::nvptx(int compute_capability) {
  // LLVM 15 knows GPUs up to sm_86 and PTX 7.5. PTX is forward compatible: the CUDA driver
  // compiles it for the GPU it runs on (an sm_90 H200 included), so newer GPUs get the newest
  // processor LLVM knows that they can run.
  static const int kKnown[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86};
  int sm = 50;
  for (int k : kKnown)
    if (k <= compute_capability) sm = k;
  return {"nvptx64-nvidia-cuda", str_cat("sm_", sm), "+ptx75"};
}

std::string CodegenTarget::cache_tag() const {
  return str_cat("kiln ", KILN_CODEGEN_KILN_VERSION, "; codegen ", KILN_CODEGEN_SOURCE_HASH, "; llvm ", llvm_version(), "; ",
                 triple, "; ", cpu, "; ", features);
}

std::string llvm_version() { return LLVM_VERSION_STRING; }

GeneratedCode generate_loop_code(const std::vector<LoopUnit>& units, const CodegenTarget& target, bool with_text,
                                 const std::string& libdevice, const std::vector<GpuKernelUnit>& gpu_kernels,
                                 const std::vector<IndexKernelUnit>& index_kernels) {
  std::unique_ptr<llvm::TargetMachine> tm = target_machine(target);
  llvm::LLVMContext context;
  llvm::Module module("kiln_kernels", context);
  module.setTargetTriple(target.triple);
  module.setDataLayout(tm->createDataLayout());
  const bool gpu = is_nvptx(target);
  for (const LoopUnit& unit : units) emit_loop_ir(unit, gpu ? KernelTarget::kNvptx : KernelTarget::kCpu, module);
  if (!gpu_kernels.empty() && !gpu) KILN_THROW(CompileError, "[codegen] reduction and rng_bits kernels are generated for NVPTX only");
  for (const GpuKernelUnit& unit : gpu_kernels) {
    if (unit.op == GpuKernelOp::kRngBits) emit_nvptx_rng_bits(unit.name, module);
    else emit_nvptx_reduction(unit, module);
  }
  for (const IndexKernelUnit& unit : index_kernels) emit_index_kernel(unit, gpu ? KernelTarget::kNvptx : KernelTarget::kCpu, module);
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(module, &problem_stream))
    KILN_THROW(CompileError, "[codegen] generated invalid LLVM IR: ", problems);
  if (gpu) link_libdevice(module, libdevice);
  optimize(module, *tm, gpu);
  GeneratedCode code;
  if (with_text) {
    llvm::raw_string_ostream os(code.ir_text);
    module.print(os, nullptr);
  }
  if (gpu) {
    code.binary = emit(module, *tm, llvm::CGFT_AssemblyFile);
    if (with_text) code.asm_text = code.binary;
  } else {
    if (with_text) code.asm_text = emit(module, *tm, llvm::CGFT_AssemblyFile);
    code.binary = emit(module, *tm, llvm::CGFT_ObjectFile);
  }
  return code;
}

}  // namespace kiln::codegen
