#pragma once
// What the CUDA/ROCm backend runs: for now nothing. The kernels of
// kernels/cuda land op by op (docs/backends.md, "CUDA and ROCm"); until an op
// has one, placement puts it on the CPU with a note and --strict refuses it.
#include "core/hal/kernel_table.h"

namespace tessera::gpu {

class GpuKernelTable final : public KernelTable {
 public:
  KernelChoice query(const OpQuery& q) const override;
};

}  // namespace tessera::gpu
