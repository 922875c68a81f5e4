#include "backends/cpu/cpu_kernel_table.h"

#include <string>

#include "kernels/cpu/cpu_kernels.h"

namespace tessera::cpu {

namespace {
// A kernel over f16 or bf16 KV pools is named for them ("f16_paged_attention__avx2"); f32's names are unchanged.
std::string kv_prefix(DType kv) { return kv == DType::f32 ? "" : std::string(name(kv)) + "_"; }
}  // namespace

KernelChoice CpuKernelTable::query(const OpQuery& q) const {
  namespace k = kernels::cpu;
  const std::string isa(k::name(k::active_isa()));
  if (q.dtype != DType::f32 && q.op != OpKind::argmax && q.op != OpKind::gather_rows)
    return {false, "", "cpu kernels take f32 activations, got " + std::string(name(q.dtype))};
  switch (q.op) {
    case OpKind::matmul:
      if (!k::matmul_supports(q.weight_dtype))
        return {false, "", "no cpu matmul for " + std::string(name(q.weight_dtype)) + " weights"};
      return {true, k::matmul_kernel_name(q.weight_dtype, 1), ""};
    case OpKind::matmul_add:
    case OpKind::matmul_silu_mul:
    case OpKind::matmul_qkv:
    case OpKind::matmul_add_rms_norm:
    case OpKind::matmul_epilogue:
      if (!k::matmul_supports(q.weight_dtype))
        return {false, "", "no cpu " + std::string(name(q.op)) + " for " + std::string(name(q.weight_dtype)) + " weights"};
      return {true, k::matmul_kernel_name(q.weight_dtype, 1) + "+" + std::string(name(q.op)), ""};
    case OpKind::embedding:
      return {true, std::string(name(q.weight_dtype)) + "_embedding", ""};
    case OpKind::rope:
      return {true, std::string(name(q.op)) + (q.rope_table ? "_from_table__" : "__") + isa, ""};
    case OpKind::rope_kv_append:
    case OpKind::kv_append:
    case OpKind::paged_attention:
      // Pools of f32, f16 or bf16 (stored rounded) or q8_0 / fp8_e4m3 (quantized
      // per 32 elements), read widened to f32 (kernels/cpu/attention.cpp).
      if (q.kv_dtype != DType::f32 && q.kv_dtype != DType::f16 && q.kv_dtype != DType::bf16 && q.kv_dtype != DType::q8_0 &&
          q.kv_dtype != DType::fp8_e4m3)
        return {false, "", "cpu KV pools are f32, f16, bf16, q8_0 or fp8_e4m3, not " + std::string(name(q.kv_dtype))};
      return {true, kv_prefix(q.kv_dtype) + std::string(name(q.op)) + (q.rope_table ? "_from_table__" : "__") + isa, ""};
    case OpKind::all_reduce:
    case OpKind::all_gather:
    case OpKind::send:
    case OpKind::recv:
      // The device's communicator (MPI's for the CPU) runs it: use_communicator.
      return {true, std::string(name(q.op)) + "_through_communicator", ""};
    default:
      return {true, std::string(name(q.op)) + "__" + isa, ""};
  }
}

// q8_0 and q4_0 on the AVX-512 VNNI family run on 16-row panels whose
// lanes are weight rows (kernels/cpu/block32_panel_gemm__avx512vnni.cpp):
// rows_x16 is their form, read in place; other layouts are gathered to it
// per k-slice, which costs most at decode. rows_x4 was measured no faster
// than rows for the 4x4 tiles (`tessera bench --matmul-layouts`,
// docs/performance.md), so other families keep rows.
WeightLayout CpuKernelTable::preferred_weight_layout(const LayoutQuery& q) const {
  return is_matmul_family(q.op) ? kernels::cpu::matmul_preferred_layout(q.weight_dtype) : WeightLayout::rows;
}

bool CpuKernelTable::reads_weight_layout(const LayoutQuery& q, WeightLayout l) const {
  if (l == WeightLayout::rows) return true;
  if (!is_matmul_family(q.op) && q.op != OpKind::embedding) return false;
  // What core/weight_layout.h lets each layout hold (checked again per
  // weight). The embedding reads any of them a row at a time (read_rows), so
  // a tied classifier is reordered once for both its readers.
  const bool plain = q.weight_dtype == DType::f32 || q.weight_dtype == DType::f16 || q.weight_dtype == DType::bf16;
  return q.weight_dtype == DType::q8_0 || q.weight_dtype == DType::q4_0 || (plain && l == WeightLayout::rows_x16);
}

}  // namespace tessera::cpu
