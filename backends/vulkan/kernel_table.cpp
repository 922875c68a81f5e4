#include "backends/vulkan/kernel_table.h"

namespace tessera::vulkan {

// Every case named, no default: a dtype added to core/dtype.h is a -Wswitch
// warning here until the shaders (kernels/vulkan/weights.glsl,
// weight_units.glsl) and weight_type_constant (encode.cpp) read it.
bool weight_dtype_supported(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::q8_0:
    case DType::q4_0:
    case DType::q4_K:
    case DType::q4_1:
    case DType::q5_0:
    case DType::q5_1:
    case DType::iq4_nl:
    case DType::q2_K:
    case DType::q3_K:
    case DType::q5_K:
    case DType::q6_K:
    case DType::iq4_xs: return true;
    case DType::i8:
    case DType::i32: return false;
  }
  return false;
}

KernelChoice VulkanKernelTable::query(const OpQuery& q) const {
  const std::string suffix = "__vulkan_" + variant_;
  if (q.dtype != DType::f32 && q.op != OpKind::argmax && q.op != OpKind::gather_rows)
    return {false, "", "the vulkan shaders take f32 activations, got " + std::string(name(q.dtype))};
  const std::string wt(name(q.weight_dtype));
  // KV pools of f32, f16, bf16, q8_0 or fp8_e4m3 (kernels/vulkan/kv_pool.glsl);
  // 16-bit pools are written two elements a word, the 8-bit ones a 32-element block an invocation.
  if (q.op == OpKind::kv_append || q.op == OpKind::paged_attention) {
    const bool blocks = q.kv_dtype == DType::q8_0 || q.kv_dtype == DType::fp8_e4m3;
    if (q.kv_dtype != DType::f32 && q.kv_dtype != DType::f16 && q.kv_dtype != DType::bf16 && !blocks)
      return {false, "", "the vulkan " + std::string(name(q.op)) + " shaders use f32, f16, bf16, q8_0 or fp8_e4m3 KV pools, not " +
                             std::string(name(q.kv_dtype))};
    const auto* kv = std::get_if<KvCacheParams>(&q.params);
    if (kv && !blocks && q.kv_dtype != DType::f32 && (kv->n_kv_heads * kv->head_dim) % 2 != 0)
      return {false, "", "the vulkan kv_append shader stores " + std::string(name(q.kv_dtype)) +
                             " rows two elements a word: an odd row width (" + std::to_string(kv->n_kv_heads * kv->head_dim) +
                             ") is not implemented"};
  }
  switch (q.op) {
    case OpKind::matmul:
    case OpKind::matmul_qkv:       // the plain matmul's dispatches over each part's rows of the packed weight
    case OpKind::matmul_silu_mul:  // the same, then silu_mul's
      if (!weight_dtype_supported(q.weight_dtype))
        return {false, "", "no vulkan matmul shader dequantizes " + wt + " blocks (f32, f16, bf16 and the GGUF block types are implemented)"};
      return {true, wt + "_gemv+" + wt + "_gemm" + (q.op == OpKind::matmul_silu_mul ? "+silu_mul" : "") + suffix, ""};
    case OpKind::embedding:
      if (!weight_dtype_supported(q.weight_dtype))
        return {false, "", "no vulkan embedding shader for " + wt + " tables (f32, f16, bf16 and the GGUF block types are implemented)"};
      return {true, wt + "_embedding" + suffix, ""};
    case OpKind::rope:  // freq_scale and llama3's frequency factors included
      if (q.rope_table) return {false, "", "the vulkan rope shader computes cos/sin itself; it takes no folded rope_table input"};
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
    case OpKind::bias_add: return {true, "elementwise_" + std::string(name(q.op)) + suffix, ""};
    case OpKind::all_reduce:
    case OpKind::all_gather:
    case OpKind::send:
    case OpKind::recv:
      return {false, "", "the vulkan backend runs no collectives or transfers between ranks (" + std::string(name(q.op)) + " runs on the CPU, through MPI)"};
    default:
      return {false, "", "the vulkan backend has no fused " + std::string(name(q.op)) + " shader; the unfused ops run instead"};
  }
}

}  // namespace tessera::vulkan
