// Run-time ISA dispatch for Kiln's own hot loops (the loop-fusion interpreter, reductions,
// rng_bits; oneDNN dispatches its own kernels). The build's baseline is
// KILN_ARCH (x86-64-v3 by default: AVX2, FMA); a file whose loops gain from AVX-512 compiles
// them a second time for x86-64-v4 by including their body twice, once plainly and once
// between KILN_ISA_V4_BEGIN and KILN_ISA_V4_END, and picks a variant with cpu_isa() when a
// kernel is created. Both variants do the same IEEE operations in the same order (only the
// vector width differs), so results are bit-identical whichever runs.
//
// Rules for a body compiled under KILN_ISA_V4_BEGIN: include no header inside it (a function
// defined there gets the AVX-512 target, and an inline one shared with other files would
// leak it to CPUs without AVX-512), and keep its functions in an anonymous namespace.
// cpu_isa_variants.inc does the double inclusion; KILN_ISA_SELECT picks a variant.
// KILN_CPU_ISA=baseline in the environment forces the baseline variants (to compare them),
// and generated kernels without AVX-512.
#pragma once

#include <cstdlib>
#include <cstring>

// The x86-64-v4 variants exist when the compiler is GCC, the target is x86-64 and the
// baseline lacks AVX-512 (a KILN_ARCH=native build on an AVX-512 CPU already has it).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__AVX512F__)
#define KILN_ISA_HAVE_V4 1
// x86-64-v4 as GCC 12 defines it: x86-64-v3 plus AVX512F/BW/CD/DQ/VL. Only ISA flags are
// added, so -mtune stays the build's and the baseline's inline helpers still inline here.
#define KILN_ISA_V4_BEGIN                 \
  _Pragma("GCC push_options")             \
  _Pragma("GCC target(\"avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt,avx512f,avx512bw,avx512cd,avx512dq,avx512vl\")")
#define KILN_ISA_V4_END _Pragma("GCC pop_options")
#else
#define KILN_ISA_HAVE_V4 0
#endif

namespace kiln::cpu {

enum class CpuIsa {
  kBaseline,  // what KILN_ARCH gives
  kV4,        // x86-64-v4 variants (only when KILN_ISA_HAVE_V4)
};

/// KILN_CPU_ISA=baseline: run as on an x86-64-v3 CPU (AVX2, no AVX-512) whatever this one has:
/// Kiln's own loops take their baseline variants and generated kernels (cpu_jit.cpp) target
/// no AVX-512, so one machine can measure both (with ONEDNN_MAX_CPU_ISA=AVX2 for oneDNN).
inline bool cpu_isa_forced_baseline() {
  const char* force = std::getenv("KILN_CPU_ISA");
  return force != nullptr && std::strcmp(force, "baseline") == 0;
}

/// The variant this process runs, chosen once: kV4 when it was compiled and the CPU (and OS)
/// support x86-64-v4, unless KILN_CPU_ISA=baseline.
inline CpuIsa cpu_isa() {
  static const CpuIsa isa = [] {
#if KILN_ISA_HAVE_V4
    if (cpu_isa_forced_baseline()) return CpuIsa::kBaseline;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return CpuIsa::kV4;
#endif
    return CpuIsa::kBaseline;
  }();
  return isa;
}

/// `&isa_v4::name` on a CPU that runs the x86-64-v4 variant, else `&isa_baseline::name`
/// (the namespaces cpu_isa_variants.inc makes).
#if KILN_ISA_HAVE_V4
#define KILN_ISA_SELECT(name) \
  (::kiln::cpu::cpu_isa() == ::kiln::cpu::CpuIsa::kV4 ? &isa_v4::name : &isa_baseline::name)
#else
#define KILN_ISA_SELECT(name) (&isa_baseline::name)
#endif

inline const char* cpu_isa_name(CpuIsa isa) { return isa == CpuIsa::kV4 ? "x86-64-v4" : "baseline"; }

}  // namespace kiln::cpu
