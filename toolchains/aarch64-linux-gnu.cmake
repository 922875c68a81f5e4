# Cross-compiling for 64-bit Arm Linux (edge boards) with Debian's
# g++-aarch64-linux-gnu: the CPU backend with its portable and neon_dotprod
# kernels, the engine, the API, the CLI and the test suites.
#   cmake --preset arm64     (or: cmake -S . -B build-arm64 -G Ninja
#                             -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake)
# No arm64 -dev package is needed: the header-only dependencies (doctest,
# nlohmann-json, CLI11) come from the host's packages; oneDNN is left out
# (TESSERA_ONEDNN=OFF: our f32 tiles serve every m) and so is cpp-httplib,
# whose Debian package is a compiled library (the CLI is built without
# `serve` and `bench serve`, and says so). The binaries run on a board, or
# here under qemu-aarch64 -L /usr/aarch64-linux-gnu (tests/arm64/).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
# Packages: the arm64 tree first, then the host's (header-only configs).
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config must not hand the host's x86 libraries to the arm64 link.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# Where a test runs the binaries on this machine (CTest, try_run).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
set(TESSERA_HTTP OFF CACHE BOOL "Build the CLI's HTTP server and client (needs cpp-httplib)")
set(TESSERA_ONEDNN OFF CACHE BOOL "Use oneDNN's f32 sgemm for large-m f32 matmuls")
set(TESSERA_VULKAN OFF CACHE BOOL "Build the Vulkan backend plugin")
set(TESSERA_CUDA OFF CACHE BOOL "Build the CUDA backend plugin where the CUDA toolkit is found")
set(TESSERA_ROCM OFF CACHE BOOL "Build the ROCm backend plugin where hipcc is found")
