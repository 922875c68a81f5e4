#pragma once
// What the CUDA/ROCm backend runs (kernels/cuda, op by op). An op without a
// kernel here is placed on the CPU with a note; --strict refuses it.
#include <string>

#include "core/hal/kernel_table.h"

namespace tessera::gpu {

class GpuKernelTable final : public KernelTable {
 public:
  // `collectives`: the name of the communicator the device was given
  // ("nccl", "rccl"), or empty: all_reduce and all_gather run only with one.
  explicit GpuKernelTable(std::string collectives = "") : collectives_(std::move(collectives)) {}
  KernelChoice query(const OpQuery& q) const override;

 private:
  std::string collectives_;
};

}  // namespace tessera::gpu
