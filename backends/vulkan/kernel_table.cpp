#include "backends/vulkan/kernel_table.h"

namespace tessera::vulkan {

bool weight_dtype_supported(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::q8_0 || t == DType::q4_0;
}

KernelChoice VulkanKernelTable::query(const OpQuery& q) const {
  const std::string suffix = "__vulkan_" + variant_;
  if (q.dtype != DType::f32 && q.op != OpKind::argmax && q.op != OpKind::gather_rows)
    return {false, "", "the vulkan shaders take f32 activations, got " + std::string(name(q.dtype))};
  const std::string wt(name(q.weight_dtype));
  switch (q.op) {
    case OpKind::matmul:
      if (!weight_dtype_supported(q.weight_dtype))
        return {false, "", "no vulkan matmul shader dequantizes " + wt + " blocks (f32, f16, bf16, q8_0, q4_0 are implemented)"};
      return {true, wt + "_gemv+" + wt + "_gemm" + suffix, ""};
    case OpKind::embedding:
      if (!weight_dtype_supported(q.weight_dtype))
        return {false, "", "no vulkan embedding shader for " + wt + " tables (f32, f16, bf16, q8_0, q4_0 are implemented)"};
      return {true, wt + "_embedding" + suffix, ""};
    case OpKind::rope:
      if (q.rope_table) return {false, "", "the vulkan rope shader computes cos/sin itself; it takes no folded rope_table input"};
      if (q.rope_freq_factors) return {false, "", "the vulkan rope shader has no per-pair frequency factors (llama3's rope_freqs)"};
      if (const auto* p = std::get_if<RopeParams>(&q.params); p && p->freq_scale != 1.0f)
        return {false, "", "the vulkan rope shader has no position scaling (freq_scale)"};
      return {true, "rope" + suffix, ""};
    case OpKind::paged_attention:  // a sliding window and soft-capped scores included
      return {true, "paged_attention_split+merge+prefill" + suffix, ""};
    case OpKind::rms_norm:
    case OpKind::head_rms_norm:
    case OpKind::scale:
    case OpKind::softcap:
    case OpKind::gelu_mul:
    case OpKind::kv_append:
    case OpKind::silu_mul:
    case OpKind::add:
    case OpKind::softmax:
    case OpKind::argmax:
    case OpKind::gather_rows: return {true, std::string(name(q.op)) + suffix, ""};
    case OpKind::mul:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::bias_add:
      return {false, "", "the vulkan backend has no " + std::string(name(q.op)) + " shader yet; placement runs it on the CPU"};
    case OpKind::matmul_qkv:
    case OpKind::matmul_silu_mul:
      // The passes fuse only for targets that have these; a graph has them unasked where the file packs the weight (phi3).
      return {false, "", "the vulkan backend has no fused " + std::string(name(q.op)) +
                             " shader: the passes leave the unfused ops on it, and a weight the file packs (phi3) runs on the CPU"};
    default:
      return {false, "", "the vulkan backend has no fused " + std::string(name(q.op)) + " shader; the unfused ops run instead"};
  }
}

}  // namespace tessera::vulkan
