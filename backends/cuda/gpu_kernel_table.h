#pragma once
// What the CUDA/ROCm backend runs (kernels/cuda, op by op). An op without a
// kernel here is placed on the CPU with a note; --strict refuses it.
#include "core/hal/kernel_table.h"

namespace tessera::gpu {

class GpuKernelTable final : public KernelTable {
 public:
  KernelChoice query(const OpQuery& q) const override;
};

}  // namespace tessera::gpu
