#pragma once
#include "core/hal/kernel_table.h"

namespace tessera::cpu {

// Every op for f32 activations; matmul and embedding for each weight dtype
// the CPU kernels implement.
class CpuKernelTable final : public KernelTable {
 public:
  KernelChoice query(const OpQuery& q) const override;
  WeightLayout preferred_weight_layout(const LayoutQuery& q) const override;
  bool reads_weight_layout(const LayoutQuery& q, WeightLayout l) const override;
};

}  // namespace tessera::cpu
