# Third-party packages, all from Debian 12 (scripts/install_deps.sh installs them).
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(dnnl REQUIRED)  # oneDNN 2.6, OpenMP runtime (Debian libdnnl-dev)
enable_language(C)  # FindHDF5 test-compiles a C program to locate libhdf5
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(nlohmann_json REQUIRED)
# Protocol Buffers (Debian libprotobuf-dev, protobuf-compiler): TensorBoard event files. The
# messages are generated from kiln/io/proto/*.proto with LITE_RUNTIME, so only
# libprotobuf-lite is linked.
find_package(Protobuf REQUIRED)
if(NOT TARGET protobuf::libprotobuf-lite OR NOT Protobuf_PROTOC_EXECUTABLE)
  message(FATAL_ERROR "Kiln needs protoc and libprotobuf-lite (TensorBoard event files). "
                      "Install them: apt-get install libprotobuf-dev protobuf-compiler (scripts/install_deps.sh)")
endif()
# libzip (Debian libzip-dev) for Keras 3's .keras archives, through pkg-config: Debian 12's
# libzip-config.cmake also imports zipcmp/zipmerge/ziptool, which live in another package and
# make find_package(libzip) fail without it.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET GLOBAL libzip)
# Image codecs for data::decode_jpeg/decode_png (Debian libturbojpeg0-dev, libspng-dev), also
# through pkg-config: libjpeg-turbo's CMake package checks for libjpeg's files too, which
# libturbojpeg0-dev does not bring.
pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET GLOBAL libturbojpeg)
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET GLOBAL spng)
if(KILN_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
# LLVM 15 (Debian llvm-15-dev): the code generator and its ORC JIT, linked as the one shared
# libLLVM-15 (static LLVM would add minutes of linking per test binary on 2 cores).
# Layers that use it: target_link_libraries(... PRIVATE LLVM) plus kiln_use_llvm_headers().
find_package(LLVM 15 REQUIRED CONFIG HINTS /usr/lib/llvm-15/lib/cmake/llvm)
function(kiln_use_llvm_headers target)
  target_include_directories(${target} SYSTEM PRIVATE ${LLVM_INCLUDE_DIRS})
endfunction()
