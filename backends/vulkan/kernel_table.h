#pragma once
#include <string>

#include "core/hal/kernel_table.h"

namespace tessera::vulkan {

// What the Vulkan shaders run: every op the model graphs use (llama, qwen2's
// biases, qwen3's per-head norms, gemma2's windows, soft-caps and GeGLU,
// phi3's packed projections, llama3's RoPE frequency factors) on f32
// activations; the matmul family (matmul, matmul_qkv, matmul_silu_mul) and
// embedding for f32, f16, bf16 weights and every GGUF block type (q8_0, q4_0,
// q4_1, q5_0, q5_1, iq4_nl, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs). Not the
// other fused ops (their unfused ops run instead) nor a folded rope_table.
// `variant` is the device's shader variant ("subgroup" or "portable"), named
// in the kernel names.
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
