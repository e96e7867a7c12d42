# Third-party packages, all from Debian 12 (scripts/install_deps.sh installs them).
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(dnnl REQUIRED)  # oneDNN 2.6, OpenMP runtime (Debian libdnnl-dev)
enable_language(C)  # FindHDF5 test-compiles a C program to locate libhdf5
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(nlohmann_json REQUIRED)
if(KILN_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
