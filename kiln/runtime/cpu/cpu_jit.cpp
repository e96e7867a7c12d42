#include "kiln/runtime/cpu/cpu_jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/Support/MemoryBuffer.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kiln/compiler/codegen/kernel_cache.h"
#include "kiln/core/debug_options.h"
#include "kiln/core/error.h"
#include "kiln/core/fnv1a.h"
#include "kiln/core/logging.h"
#include "kiln/core/str_cat.h"
#include "kiln/runtime/cpu/cpu_isa_impl.h"

namespace kiln::cpu {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// A symbol prefix from the key: the same kernel gets the same symbols in every process, so a
// cached object links as compiled.
std::string prefix_for(const std::string& key) {
  char name[32];
  std::snprintf(name, sizeof name, "kiln_loop_%016llx", static_cast<unsigned long long>(fnv1a64(key)));
  return name;
}

// KILN_DUMP_IR: one .ll and one .s per compile, named after its first kernel.
void dump(const std::string& dir, const std::vector<codegen::LoopUnit>& units, const codegen::GeneratedCode& code) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/kernels", ec);
  const std::string base = str_cat(dir, "/kernels/", units[0].prefix, units.size() > 1 ? str_cat("+", units.size() - 1) : "");
  std::ofstream(base + ".ll") << code.ir_text;
  std::ofstream(base + ".s") << code.asm_text;
}

// The host as LLVM detects it; under KILN_CPU_ISA=baseline without its AVX-512 and AMX
// features, as Kiln's own loops (cpu_isa_impl.h), so an AVX-512 machine generates (and times
// the compiling of) the kernels an AVX2-only one would.
codegen::CodegenTarget jit_target() {
  codegen::CodegenTarget t = codegen::CodegenTarget::host();
  if (!cpu_isa_forced_baseline()) return t;
  std::string features;
  std::stringstream all(t.features);
  for (std::string f; std::getline(all, f, ',');) {
    if (f.size() > 1 && f[0] == '+' && (f.rfind("+avx512", 0) == 0 || f.rfind("+amx", 0) == 0)) f[0] = '-';
    features += str_cat(features.empty() ? "" : ",", f);
  }
  t.features = features;
  return t;
}

}  // namespace

class CpuJit::Impl {
 public:
  Impl(std::unique_ptr<llvm::orc::LLJIT> jit, codegen::CodegenTarget target, const DebugOptions& options)
      : jit_(std::move(jit)), target_(std::move(target)), cache_(options.kernel_cache_dir, target_.cache_tag()),
        dump_dir_(options.dump_ir_dir) {}

  void compile(std::vector<JitRequest>& requests) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The kernels not loaded yet, each once, in request order (so the batch key is stable).
    std::vector<std::string> keys;  // of the units
    std::vector<codegen::LoopUnit> units;
    std::unordered_map<std::string, size_t> unit_of;
    std::vector<std::string> request_keys;
    for (JitRequest& r : requests) {
      const std::string& key = request_keys.emplace_back(str_cat(r.read ? "read " : "store ", r.ir->key()));
      if (auto it = loaded_.find(key); it != loaded_.end()) {
        ++stats_.memory_hits;
        r.functions = it->second;
      } else if (unit_of.emplace(key, units.size()).second) {
        units.push_back({r.ir, prefix_for(key), r.read});
        keys.push_back(key);
      }
    }
    if (units.empty()) return;
    std::string batch_key;
    for (const std::string& k : keys) batch_key += str_cat(k.size(), ":", k, "\n");
    std::optional<std::string> object;
    if (dump_dir_.empty()) object = cache_.load(batch_key);
    if (object) {
      stats_.disk_hits += static_cast<int64_t>(units.size());
    } else {
      const auto start = std::chrono::steady_clock::now();
      codegen::GeneratedCode code = codegen::generate_loop_code(units, target_, !dump_dir_.empty());
      stats_.generate_ms += ms_since(start);
      stats_.compiled += static_cast<int64_t>(units.size());
      if (!dump_dir_.empty()) dump(dump_dir_, units, code);
      cache_.store(batch_key, code.binary);
      object = std::move(code.binary);
    }
    const auto start = std::chrono::steady_clock::now();
    if (llvm::Error e = jit_->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(*object, units[0].prefix)))
      KILN_THROW(CompileError, "[codegen] cannot load generated kernels: ", llvm::toString(std::move(e)));
    for (size_t u = 0; u < units.size(); ++u) {
      auto functions = std::make_shared<JitLoopFunctions>();
      const size_t stores = units[u].read ? units[u].ir->stages.size() - 1 : units[u].ir->stages.size();
      for (size_t s = 0; s < stores; ++s)
        functions->stages.push_back(lookup<codegen::CpuStageFn>(codegen::stage_symbol(units[u].prefix, s)));
      if (units[u].read) functions->read = lookup<codegen::CpuReadFn>(codegen::read_symbol(units[u].prefix));
      loaded_.emplace(keys[u], functions);
    }
    stats_.load_ms += ms_since(start);
    for (size_t i = 0; i < requests.size(); ++i)
      if (requests[i].functions == nullptr) requests[i].functions = loaded_.at(request_keys[i]);
  }

  std::vector<void*> load_object(const std::string& object, const std::vector<std::string>& symbols) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (llvm::Error e = jit_->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, symbols.empty() ? "object" : symbols[0])))
      KILN_THROW(CompileError, "[codegen] cannot load generated kernels: ", llvm::toString(std::move(e)));
    std::vector<void*> addresses;
    for (const std::string& s : symbols) addresses.push_back(lookup<void*>(s));
    return addresses;
  }

  Stats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    Stats s = stats_;
    s.disk_rejected = cache_.stats().rejected;
    return s;
  }

  const codegen::CodegenTarget& target() const { return target_; }

 private:
  template <typename Fn>
  Fn lookup(const std::string& name) {
    auto address = jit_->lookup(name);
    if (!address) KILN_THROW(CompileError, "[codegen] kernel symbol ", name, " missing: ", llvm::toString(address.takeError()));
    return address->toPtr<Fn>();
  }

  mutable std::mutex mutex_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  codegen::CodegenTarget target_;
  codegen::KernelCache cache_;
  std::string dump_dir_;
  std::unordered_map<std::string, std::shared_ptr<const JitLoopFunctions>> loaded_;
  Stats stats_;
};

CpuJit::CpuJit(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuJit::~CpuJit() = default;

CpuJit* CpuJit::instance() {
  static CpuJit* jit = []() -> CpuJit* {
    const DebugOptions& options = DebugOptions::global();
    try {
      codegen::CodegenTarget target = jit_target();
      // JITLink rather than RuntimeDyld: it places an object's code and constants in one
      // allocation. RuntimeDyld's section memory manager maps them separately, and with a large
      // mapping between them (the guarded device's arena showed it) a kernel's 32-bit
      // PC-relative load of its constant pool pointed more than 2 GiB away, into unmapped memory.
      auto built = llvm::orc::LLJITBuilder()
                       .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& session, const llvm::Triple&) {
                         return std::make_unique<llvm::orc::ObjectLinkingLayer>(session);
                       })
                       .create();
      if (!built) KILN_THROW(CompileError, llvm::toString(built.takeError()));
      std::unique_ptr<llvm::orc::LLJIT> lljit = std::move(*built);
      // Generated kernels call libm (expf, tanhf, ...) from this process.
      auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          lljit->getDataLayout().getGlobalPrefix());
      if (!process) KILN_THROW(CompileError, llvm::toString(process.takeError()));
      lljit->getMainJITDylib().addGenerator(std::move(*process));
      log(LogLevel::kInfo, str_cat("codegen: LLVM ", codegen::llvm_version(), " for ", target.cpu,
                                   cpu_isa_forced_baseline() ? " without AVX-512 (KILN_CPU_ISA=baseline)" : ""));
      // Leaked on purpose: kernels stay callable while static destructors run.
      return new CpuJit(std::make_unique<Impl>(std::move(lljit), std::move(target), options));
    } catch (const Error& e) {
      log(LogLevel::kWarning, str_cat("codegen: LLVM JIT unavailable (", e.what(),
                                      "); fused loops run on the interpreter"));
      return nullptr;
    }
  }();
  return jit;
}

void CpuJit::compile(std::vector<JitRequest>& requests) {
  try {
    impl_->compile(requests);
  } catch (const Error& e) {
    log(LogLevel::kWarning, str_cat("codegen: ", e.what(), "; these loops run on the interpreter"));
  }
}

std::vector<void*> CpuJit::load_object(const std::string& object, const std::vector<std::string>& symbols) {
  return impl_->load_object(object, symbols);
}

CpuJit::Stats CpuJit::stats() const { return impl_->stats(); }
const codegen::CodegenTarget& CpuJit::target() const { return impl_->target(); }

}  // namespace kiln::cpu
