# The CUDA and ROCm backend plugins (included from backends/CMakeLists.txt).
#
# One source: backends/cuda/*.cpp is the host side (compiled by the C++
# compiler against the CUDA or HIP runtime headers), kernels/cuda/*.cu the
# device side (nvcc for NVIDIA, hipcc for AMD), both written against
# kernels/cuda/gpu_runtime.h. Every kernel is compiled ahead of time for each
# listed target; nothing is JIT-compiled at run time, so a GPU outside the
# list is refused at open with a line naming what was built.

# --- CUDA -----------------------------------------------------------------
# sm_80 (A100), sm_86 (RTX 30xx, A10), sm_89 (L4, RTX 40xx), sm_90 (H100, H200).
set(TESSERA_CUDA_ARCHITECTURES "80-real;86-real;89-real;90-real" CACHE STRING
    "CUDA targets the CUDA backend is compiled for (CMake's CUDA_ARCHITECTURES form)")
set(TESSERA_CUDA_BUILT OFF)
if(NOT TESSERA_CUDA)
  message(STATUS "tessera: CUDA backend not built (TESSERA_CUDA=OFF)")
else()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND OR NOT CUDAToolkit_NVCC_EXECUTABLE)
    message(STATUS "tessera: CUDA backend not built (no CUDA toolkit: nvcc not on PATH nor in /usr/local/cuda)")
  else()
    include(${PROJECT_SOURCE_DIR}/cmake/cuda_language.cmake)
    tessera_enable_cuda_language()
    message(STATUS "tessera: CUDA backend built with nvcc ${CMAKE_CUDA_COMPILER_VERSION} for ${TESSERA_CUDA_ARCHITECTURES}")
    # NCCL, for the plugin's communicator (tensor parallelism): the header
    # and library of the toolkit (or the system). Optional: without it the
    # plugin builds and its create_communicator says "built without NCCL".
    find_path(TESSERA_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(TESSERA_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(TESSERA_NCCL_INCLUDE AND TESSERA_NCCL_LIBRARY)
      file(READ ${TESSERA_NCCL_INCLUDE}/nccl.h nccl_header)
      set(nccl_version "")
      foreach(part MAJOR MINOR PATCH)
        string(REGEX MATCH "#define NCCL_${part} +([0-9]+)" found "${nccl_header}")
        list(APPEND nccl_version "${CMAKE_MATCH_1}")
      endforeach()
      list(JOIN nccl_version "." nccl_version)
      message(STATUS "tessera: CUDA communicator: NCCL ${nccl_version} (${TESSERA_NCCL_INCLUDE}/nccl.h; ${TESSERA_NCCL_LIBRARY}, opened at run time)")
      set(TESSERA_CUDA_NCCL ON CACHE INTERNAL "the CUDA plugin is built with NCCL")
    else()
      message(STATUS "tessera: CUDA communicator not built (nccl.h and libnccl not found under the CUDA toolkit nor the system)")
      set(TESSERA_CUDA_NCCL OFF CACHE INTERNAL "the CUDA plugin is built with NCCL")
    endif()
    set(TESSERA_CUDA_BUILT ON)
    add_subdirectory(${PROJECT_SOURCE_DIR}/backends/cuda ${PROJECT_BINARY_DIR}/backends/cuda)
  endif()
endif()

# --- ROCm -----------------------------------------------------------------
# gfx908 (MI100), gfx90a (MI200), gfx942 (MI300), gfx1030 (RX 6000), gfx1100
# (RX 7000): each is probed with the installed hipcc, and those it cannot
# compile for (Debian 12's ROCm 5.2: gfx942 and gfx11xx) are skipped, saying why.
set(TESSERA_ROCM_TARGETS "gfx908;gfx90a;gfx942;gfx1030;gfx1100" CACHE STRING
    "AMD GPU targets the ROCm backend is compiled for, where the installed hipcc can")
set(TESSERA_ROCM_BUILT OFF)
if(NOT TESSERA_ROCM)
  message(STATUS "tessera: ROCm backend not built (TESSERA_ROCM=OFF)")
else()
  find_program(TESSERA_HIPCC hipcc)
  find_path(TESSERA_HIP_INCLUDE hip/hip_runtime_api.h)
  find_library(TESSERA_AMDHIP64 amdhip64)
  if(NOT TESSERA_HIPCC OR NOT TESSERA_HIP_INCLUDE OR NOT TESSERA_AMDHIP64)
    message(STATUS "tessera: ROCm backend not built (needs hipcc and the HIP runtime: apt install hipcc libamdhip64-dev)")
  else()
    set(probe ${PROJECT_BINARY_DIR}/rocm_probe.hip)
    file(WRITE ${probe} "#include <hip/hip_runtime.h>\n__global__ void probe(float* p) { p[threadIdx.x] = 1.0f; }\n")
    set(TESSERA_ROCM_BUILT_TARGETS "")
    foreach(target ${TESSERA_ROCM_TARGETS})
      execute_process(
        COMMAND ${TESSERA_HIPCC} -x hip -c --offload-arch=${target} ${probe} -o ${PROJECT_BINARY_DIR}/rocm_probe_${target}.o
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
      if(rc EQUAL 0)
        list(APPEND TESSERA_ROCM_BUILT_TARGETS ${target})
      else()
        string(REGEX MATCH "error: [^\n]*" why "${err}")
        if(NOT why)
          set(why "hipcc exited with ${rc}")
        endif()
        message(STATUS "tessera: ROCm target ${target} skipped: ${why}")
      endif()
    endforeach()
    if(NOT TESSERA_ROCM_BUILT_TARGETS)
      message(STATUS "tessera: ROCm backend not built (hipcc compiles for none of ${TESSERA_ROCM_TARGETS})")
    else()
      message(STATUS "tessera: ROCm backend built with ${TESSERA_HIPCC} for ${TESSERA_ROCM_BUILT_TARGETS}")
      # RCCL (not packaged in Debian 12): the communicator's path is compiled
      # only where rccl/rccl.h and librccl are found (ROCm's own packages).
      find_path(TESSERA_RCCL_INCLUDE rccl/rccl.h HINTS ${TESSERA_HIP_INCLUDE} /opt/rocm/include)
      find_library(TESSERA_RCCL_LIBRARY rccl HINTS /opt/rocm/lib)
      if(TESSERA_RCCL_INCLUDE AND TESSERA_RCCL_LIBRARY)
        message(STATUS "tessera: ROCm communicator: RCCL (${TESSERA_RCCL_INCLUDE}/rccl/rccl.h; ${TESSERA_RCCL_LIBRARY}, opened at run time)")
        set(TESSERA_ROCM_RCCL ON CACHE INTERNAL "the ROCm plugin is built with RCCL")
      else()
        message(STATUS "tessera: ROCm communicator not built (rccl/rccl.h and librccl not found: ROCm's rccl-dev package)")
        set(TESSERA_ROCM_RCCL OFF CACHE INTERNAL "the ROCm plugin is built with RCCL")
      endif()
      set(TESSERA_ROCM_BUILT ON)
      add_subdirectory(${PROJECT_SOURCE_DIR}/backends/rocm ${PROJECT_BINARY_DIR}/backends/rocm)
    endif()
  endif()
endif()
