# cmake -P script behind ctest's Install.DownstreamProjectsBuildAndTrain (see CMakeLists.txt
# beside it). Every scratch file lives under WORK_DIR, removed first.
cmake_minimum_required(VERSION 3.25)
foreach(var KILN_BUILD_DIR KILN_SOURCE_DIR WORK_DIR GENERATOR CXX CC PKG_CONFIG INSTALL_LIBDIR)
  if(NOT ${var})
    message(FATAL_ERROR "downstream_test: ${var} is not set (or pkg-config was not found)")
  endif()
endforeach()

# run(<step> <command...>): runs the command, stops the test with its output when it fails.
function(run step)
  message(STATUS "downstream_test: ${step}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "downstream_test: ${step} failed (${rc}):\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run("install into ${prefix}" ${CMAKE_COMMAND} --install ${KILN_BUILD_DIR} --prefix ${prefix})

# The include root holds kiln/ only, with the generated version.h and no internal headers.
file(GLOB include_root RELATIVE ${prefix}/include ${prefix}/include/*)
if(NOT include_root STREQUAL "kiln")
  message(FATAL_ERROR "downstream_test: ${prefix}/include holds '${include_root}', expected only 'kiln'")
endif()
if(NOT EXISTS ${prefix}/include/kiln/version.h OR NOT EXISTS ${prefix}/include/kiln/keras/keras.h)
  message(FATAL_ERROR "downstream_test: kiln/version.h or kiln/keras/keras.h was not installed")
endif()
file(GLOB_RECURSE impl_headers ${prefix}/include/*_impl.h)
if(impl_headers)
  message(FATAL_ERROR "downstream_test: internal headers were installed: ${impl_headers}")
endif()

# 1. A separate CMake project: find_package(kiln CONFIG REQUIRED) + kiln::kiln.
set(launcher "")
if(CXX_LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
endif()
set(make_program "")
if(MAKE_PROGRAM)
  set(make_program -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
run("configure examples/downstream"
  ${CMAKE_COMMAND} -S ${KILN_SOURCE_DIR}/examples/downstream -B ${WORK_DIR}/build -G ${GENERATOR}
  ${make_program} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${CC}
  ${launcher} -DCMAKE_PREFIX_PATH=${prefix})
run("build examples/downstream" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("run the find_package build" ${WORK_DIR}/build/downstream)
message(STATUS "${last_output}")

# 2. pkg-config: the same program in one compiler command, no flags listed by hand.
set(ENV{PKG_CONFIG_PATH} ${prefix}/${INSTALL_LIBDIR}/pkgconfig)
run("pkg-config --cflags --libs kiln" ${PKG_CONFIG} --cflags --libs kiln)
string(STRIP "${last_output}" pc_flags)
message(STATUS "pkg-config --cflags --libs kiln: ${pc_flags}")
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run("compile and link with the pkg-config flags"
  ${CXX_LAUNCHER} ${CXX} -std=c++20 -O2 ${KILN_SOURCE_DIR}/examples/downstream/main.cpp ${pc_flags}
  -o ${WORK_DIR}/downstream_pkgconfig)
run("run the pkg-config build" ${WORK_DIR}/downstream_pkgconfig)
message(STATUS "${last_output}")
