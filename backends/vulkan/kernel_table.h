#pragma once
#include <string>

#include "core/hal/kernel_table.h"

namespace tessera::vulkan {

// What the Vulkan shaders run: every op of the llama graph on f32
// activations; matmul and embedding for f32, f16, bf16 weights and every
// GGUF block type (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_K, q3_K, q4_K,
// q5_K, q6_K, iq4_xs). `variant` is the device's shader variant ("subgroup" or
// "portable"), named in the kernel names.
class VulkanKernelTable final : public KernelTable {
 public:
  explicit VulkanKernelTable(std::string variant) : variant_(std::move(variant)) {}
  KernelChoice query(const OpQuery& q) const override;

 private:
  std::string variant_;
};

// Whether the shaders read weights of this dtype (matmul and embedding).
bool weight_dtype_supported(DType t);

}  // namespace tessera::vulkan
