# CUDA as a language of the calling directory (enable_language is directory
# scoped): the backend's directory and the tests' (tests/gpu_host) call it.
macro(tessera_enable_cuda_language)
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  set(CMAKE_CUDA_ARCHITECTURES ${TESSERA_CUDA_ARCHITECTURES})
  enable_language(CUDA)
  # C++20 in device code too, so the launchers take the CPU kernels'
  # argument structs; CMake 3.25 does not know that nvcc 13 has it.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endmacro()
