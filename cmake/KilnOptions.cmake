# Every build switch Kiln has, with its default.
option(KILN_BUILD_TESTS "Build the GoogleTest suites" ON)
option(KILN_BUILD_EXAMPLES "Build examples/" ON)
option(KILN_BUILD_BENCH "Build bench/ (JSON-line benchmarks)" ON)
option(KILN_WERROR "Treat warnings as errors (ON in CI)" OFF)
# ON means address;undefined; "thread" gives ThreadSanitizer; empty or OFF disables.
set(KILN_SANITIZE "" CACHE STRING "Sanitizers: ON (address;undefined), thread, or a ;-list")
set(KILN_MPI "AUTO" CACHE STRING "Build the MPI collectives: AUTO, ON or OFF")
set(KILN_CUDA "OFF" CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
# Kernels are compiled for the build machine by default (AVX2+FMA here); set to "" for a
# portable build.
set(KILN_ARCH "native" CACHE STRING "Value for -march (empty: compiler default)")
if(KILN_ARCH)
  add_compile_options(-march=${KILN_ARCH})
endif()
