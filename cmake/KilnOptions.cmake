# Every build switch Kiln has, with its default.
option(KILN_BUILD_TESTS "Build the GoogleTest suites" ON)
option(KILN_BUILD_EXAMPLES "Build examples/" ON)
option(KILN_BUILD_BENCH "Build bench/ (JSON-line benchmarks)" ON)
option(KILN_WERROR "Treat warnings as errors (ON in CI)" OFF)
# tools/fuzz/: libFuzzer targets for the image decoders. Needs clang (-fsanitize=fuzzer);
# every Kiln target is then compiled with coverage for the fuzzer (fuzzer-no-link).
# tools/fuzz/run_fuzzers.sh configures such a build and runs them.
option(KILN_BUILD_FUZZERS "Build tools/fuzz/ (libFuzzer; clang only)" OFF)
if(KILN_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KILN_BUILD_FUZZERS needs clang (libFuzzer); configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
# ON means address;undefined; "thread" gives ThreadSanitizer; empty or OFF disables.
set(KILN_SANITIZE "" CACHE STRING "Sanitizers: ON (address;undefined), thread, or a ;-list")
set(KILN_MPI "AUTO" CACHE STRING "Build the MPI collectives: AUTO, ON or OFF")
set(KILN_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO (when the toolkit is found), ON or OFF")
# Target CPU. The default build runs on any x86-64-v3 CPU (Haswell, Zen 1 and later: AVX2, FMA,
# BMI2), so binaries move between machines; Kiln's own hot loops (loop fusions, reductions,
# rng_bits) also carry x86-64-v4 (AVX-512) variants that are chosen at run time
# (kiln/runtime/cpu/cpu_isa_impl.h), and oneDNN dispatches its kernels at run time itself.
# -DKILN_ARCH=native compiles everything for the build machine (the old default: not portable);
# "" leaves -march to the compiler (x86-64 baseline). Changing the default does not touch an
# existing build tree: its cache keeps the value it was configured with.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(_kiln_default_arch "x86-64-v3")
else()
  set(_kiln_default_arch "")
endif()
set(KILN_ARCH "${_kiln_default_arch}" CACHE STRING
    "Value for -march: x86-64-v3 (default on x86-64: portable), native, or empty (compiler default)")
# -mtune: empty keeps the compiler's choice (generic for -march=x86-64-v3, the build machine for
# -march=native). Tuning never changes which instructions run, so any value stays portable.
set(KILN_TUNE "" CACHE STRING "Value for -mtune (empty: the compiler's choice for KILN_ARCH)")
if(KILN_ARCH)
  add_compile_options(-march=${KILN_ARCH})
endif()
if(KILN_TUNE)
  add_compile_options(-mtune=${KILN_TUNE})
endif()
