# KILN_CUDA: AUTO (default) builds the CUDA backend (kiln/runtime/cuda/) when the CUDA toolkit is
# found, ON fails here when it is not, OFF skips it. Only the toolkit's headers are used at build
# time: libcuda.so.1 and cuBLASLt are opened with dlopen when a program first asks for a GPU, so
# every binary still starts on a machine without CUDA libraries or a driver.
string(TOUPPER "${KILN_CUDA}" _kiln_cuda)
if(NOT _kiln_cuda MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "KILN_CUDA must be AUTO, ON or OFF, not '${KILN_CUDA}'.")
endif()
set(KILN_HAVE_CUDA OFF)
if(NOT _kiln_cuda STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(KILN_HAVE_CUDA ON)
    # libdevice: CUDA's math functions as bitcode, linked into the generated PTX.
    # (CUDAToolkit_LIBRARY_ROOT is empty for some layouts; nvvm/ sits beside bin/.)
    get_filename_component(KILN_CUDA_LIBDEVICE "${CUDAToolkit_BIN_DIR}/../nvvm/libdevice/libdevice.10.bc" ABSOLUTE)
    if(NOT EXISTS "${KILN_CUDA_LIBDEVICE}")
      message(WARNING "CUDA backend: no libdevice at ${KILN_CUDA_LIBDEVICE}: programs with exp, log, tanh, ... will not compile for the GPU")
    endif()
    message(STATUS "CUDA backend: building kiln/runtime/cuda (CUDA ${CUDAToolkit_VERSION}, ${CUDAToolkit_LIBRARY_DIR})")
  elseif(_kiln_cuda STREQUAL "ON")
    message(FATAL_ERROR "KILN_CUDA=ON but no CUDA toolkit was found. Hint: set CUDAToolkit_ROOT "
                        "(e.g. /usr/local/cuda) or configure with -DKILN_CUDA=AUTO or OFF.")
  else()
    message(STATUS "CUDA backend: not built (no CUDA toolkit found; KILN_CUDA=AUTO)")
  endif()
else()
  message(STATUS "CUDA backend: not built (KILN_CUDA=OFF)")
endif()
