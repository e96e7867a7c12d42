# Third-party packages, all from Debian 12 (scripts/install_deps.sh installs them).
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
if(KILN_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
