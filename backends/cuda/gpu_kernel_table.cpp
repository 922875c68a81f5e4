#include "backends/cuda/gpu_kernel_table.h"

#include <string>

#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

KernelChoice GpuKernelTable::query(const OpQuery& q) const {
  return {false, "", std::string(name(q.op)) + " has no " TESSERA_GPU_BACKEND " kernel in this build yet"};
}

}  // namespace tessera::gpu
