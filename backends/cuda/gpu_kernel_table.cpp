#include "backends/cuda/gpu_kernel_table.h"

#include <string>
#include <variant>

#include "backends/cuda/gpu_nccl.h"
#include "kernels/cuda/gpu_runtime.h"
#include "kernels/cuda/launch.h"
#include "kernels/kv_element.h"

namespace tessera::gpu {

namespace {

KernelChoice yes(const char* kernel) { return {true, kernel, ""}; }
KernelChoice no(std::string why) { return {false, "", std::move(why)}; }

// Why `op` cannot use KV pools of type t with heads of head_dim (-1: not
// known here); empty when it can. The 8-bit pools hold 32-element blocks of
// one head's row.
std::string kv_pool_refusal(OpKind op, DType t, int32_t head_dim) {
  const std::string what = std::string(name(op)) + (op == OpKind::kv_append ? " into " : " over ") + std::string(name(t)) + " KV pools";
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16 && !tessera::kernels::is_kv_block_type(t))
    return what + " (f32, f16, bf16, q8_0, fp8_e4m3)";
  if (tessera::kernels::is_kv_block_type(t) && head_dim >= 0 && head_dim % tessera::kernels::kKvBlock != 0)
    return what + " with head_dim " + std::to_string(head_dim) + " (a multiple of 32 is needed)";
  return {};
}

}  // namespace

// What kernels/cuda has a kernel for; the executable asks the same question
// of every dispatch it compiles, so this is the one list.
KernelChoice GpuKernelTable::query(const OpQuery& q) const {
  if (q.dtype != DType::f32) return no(std::string(name(q.op)) + " on " + std::string(name(q.dtype)) + " activations");
  switch (q.op) {
    case OpKind::embedding:
      return kernels::embedding_reads(q.weight_dtype)
                 ? yes("embedding_rows")
                 : no("embedding of a " + std::string(name(q.weight_dtype)) + " table has no " TESSERA_GPU_BACKEND " kernel yet");
    case OpKind::matmul:
    case OpKind::matmul_add:
    case OpKind::matmul_add_rms_norm:
    case OpKind::matmul_silu_mul:
    case OpKind::matmul_qkv:
    case OpKind::matmul_epilogue:
      return kernels::matmul_reads(q.weight_dtype)
                 ? yes("matmul_gemv / gemm_tiled_f32")
                 : no(std::string(name(q.op)) + " with " + std::string(name(q.weight_dtype)) + " weights has no " TESSERA_GPU_BACKEND " kernel");
    case OpKind::rope: return yes("rope_rows");  // plain, folded table and frequency factors alike
    case OpKind::rope_kv_append:
      // The rotated K rows are written by the rope kernel, in f32 only; kv_append and rope run unfused for the others.
      return q.kv_dtype == DType::f32 ? yes("rope_rows")
                                      : no("rope_kv_append into " + std::string(name(q.kv_dtype)) + " KV pools (the unfused ops run)");
    case OpKind::kv_append: {
      const auto* kv = std::get_if<KvCacheParams>(&q.params);
      if (std::string why = kv_pool_refusal(q.op, q.kv_dtype, kv ? kv->head_dim : -1); !why.empty()) return no(std::move(why));
      return yes("kv_append");
    }
    case OpKind::paged_attention: {
      const auto* p = std::get_if<AttentionParams>(&q.params);
      if (std::string why = kv_pool_refusal(q.op, q.kv_dtype, p ? p->head_dim : -1); !why.empty()) return no(std::move(why));
      if (p && (p->head_dim < 1 || p->head_dim > 256))
        return no("paged_attention with head_dim " + std::to_string(p->head_dim) + " (the " TESSERA_GPU_BACKEND " kernel takes 1..256)");
      return yes("paged_attention_online_softmax");
    }
    case OpKind::rms_norm:
    case OpKind::head_rms_norm:
    case OpKind::add_rms_norm: return yes("rms_norm_rows");
    case OpKind::add:
    case OpKind::mul:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::silu_mul:
    case OpKind::gelu_mul:
    case OpKind::scale:
    case OpKind::softcap:
    case OpKind::bias_add: return yes("elementwise");
    case OpKind::elementwise: return yes("elementwise_program");
    case OpKind::softmax: return yes("softmax_rows");
    case OpKind::argmax: return yes("argmax_rows");
    case OpKind::gather_rows: return yes("gather_rows");
    case OpKind::copy: return yes("copy");
    case OpKind::all_reduce:
    case OpKind::all_gather:
      // The device's communicator runs them (GpuDevice::use_communicator).
      if (!built_with_collectives()) return no(std::string(name(q.op)) + ": " + built_without_collectives());
      if (collectives_.empty())
        return no(std::string(name(q.op)) + " needs a communicator and this " TESSERA_GPU_BACKEND
                  " device was given none (Device::use_communicator, with create_communicator's " TESSERA_GPU_COLLECTIVES ")");
      return {true, std::string(name(q.op)) + "_" + collectives_, ""};
    default: break;
  }
  return no(std::string(name(q.op)) + " has no " TESSERA_GPU_BACKEND " kernel in this build yet");
}

}  // namespace tessera::gpu
