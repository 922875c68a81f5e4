// ISA probe and the per-family kernel tables. The family is chosen once, on
// first use: TESSERA_CPU_ISA=portable|avx2|avx512_vnni|neon_dotprod if set
// and runnable, else the best the CPU runs; force_isa() switches it (tests, --isa).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/q8_K_activations.h"

#if defined(TESSERA_X86)
#include <cpuid.h>
#endif
#if defined(TESSERA_AARCH64)
#include <sys/auxv.h>
#endif

namespace tessera::kernels::cpu {

std::string_view name(Isa isa) {
  switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx2: return "avx2";
    case Isa::avx512_vnni: return "avx512_vnni";
    case Isa::neon_dotprod: return "neon_dotprod";
  }
  return "unknown";
}

#if defined(TESSERA_X86)
namespace {
// CPUID.1:ECX bit 29. (Clang's __builtin_cpu_supports has no "f16c"; the OS
// side of it is covered by the AVX2 check, which includes XGETBV.)
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}
}  // namespace
#endif

Isa detect_isa() {
#if defined(TESSERA_X86)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni"))
    return Isa::avx512_vnni;
  if (avx2) return Isa::avx2;
#endif
#if defined(TESSERA_AARCH64)
  // ASIMD is baseline on aarch64 (its f16 -> f32 widening included); the
  // family's integer tiles need sdot, Armv8.2-A's dot product (FEAT_DotProd).
  const unsigned long hw = getauxval(AT_HWCAP);
  if ((hw & HWCAP_ASIMD) && (hw & HWCAP_ASIMDDP)) return Isa::neon_dotprod;
#endif
  return Isa::portable;
}

std::vector<Isa> runnable_isas() {
  std::vector<Isa> out{Isa::portable};
  const Isa best = detect_isa();
  if (best == Isa::avx2 || best == Isa::avx512_vnni) out.push_back(Isa::avx2);
  if (best == Isa::avx512_vnni) out.push_back(Isa::avx512_vnni);
  if (best == Isa::neon_dotprod) out.push_back(Isa::neon_dotprod);
  return out;
}

namespace {

Isa initial_isa() {
  const Isa best = detect_isa();
  const char* env = std::getenv("TESSERA_CPU_ISA");
  if (env == nullptr || *env == '\0') return best;
  for (Isa isa : runnable_isas())
    if (name(isa) == env) return isa;
  std::string runnable;
  for (Isa isa : runnable_isas()) runnable += (runnable.empty() ? "" : ", ") + std::string(name(isa));
  std::fprintf(stderr, "tessera: TESSERA_CPU_ISA=%s is not one this CPU runs (%s); using %s\n", env, runnable.c_str(),
               std::string(name(best)).c_str());
  return best;
}

std::atomic<Isa>& isa_slot() {
  static std::atomic<Isa> slot{initial_isa()};
  return slot;
}

}  // namespace

Isa active_isa() { return isa_slot().load(std::memory_order_relaxed); }

void force_isa(Isa isa) {
  const std::vector<Isa> runnable = runnable_isas();
  if (std::find(runnable.begin(), runnable.end(), isa) == runnable.end()) {
    std::fprintf(stderr, "tessera: force_isa(%s): this CPU cannot run it\n", std::string(name(isa)).c_str());
    std::abort();
  }
  isa_slot().store(isa, std::memory_order_relaxed);
}

namespace detail {

namespace {
constexpr IsaKernels kPortable{
    .isa = Isa::portable,
    .suffix = "portable",
    .quantize_row = quantize_row__portable,
    .q8_0_tile = q8_0_tile__portable,
    .q4_0_tile = q4_0_tile__portable,
    .q4_1_tile = q4_1_tile__portable,
    .q5_0_tile = q5_0_tile__portable,
    .q5_1_tile = q5_1_tile__portable,
    .iq4_nl_tile = iq4_nl_tile__portable,
    .quantize_row_K = quantize_row_q8_K,
    .q2_K_tile = q2_K_tile__portable,
    .q3_K_tile = q3_K_tile__portable,
    .q4_K_tile = q4_K_tile__portable,
    .q5_K_tile = q5_K_tile__portable,
    .q6_K_tile = q6_K_tile__portable,
    .iq4_xs_tile = iq4_xs_tile__portable,
    .f32_tile = f32_tile__portable,
    .f16_tile = f16_tile__portable,
    .bf16_tile = bf16_tile__portable,
    .dot = dot__portable,
    .axpy = axpy__portable,
    .f16_to_f32 = f16_to_f32__portable,
    .bf16_to_f32 = bf16_to_f32__portable,
    .f32_to_f16 = f32_to_f16__portable,
    .f32_to_bf16 = f32_to_bf16__portable,
    .attention_block = attention_block__portable,
    .attention_exp = attention_exp__portable,
};
#if defined(TESSERA_X86)
constexpr IsaKernels kAvx2{
    .isa = Isa::avx2,
    .suffix = "avx2",
    .quantize_row = quantize_row__avx2,
    .q8_0_tile = q8_0_tile__avx2,
    .q4_0_tile = q4_0_tile__avx2,
    .q4_1_tile = q4_1_tile__avx2,
    .q5_0_tile = q5_0_tile__avx2,
    .q5_1_tile = q5_1_tile__avx2,
    .iq4_nl_tile = iq4_nl_tile__avx2,
    .quantize_row_K = quantize_row_q8_K,
    .q2_K_tile = q2_K_tile__avx2,
    .q3_K_tile = q3_K_tile__avx2,
    .q4_K_tile = q4_K_tile__avx2,
    .q5_K_tile = q5_K_tile__avx2,
    .q6_K_tile = q6_K_tile__avx2,
    .iq4_xs_tile = iq4_xs_tile__avx2,
    .f32_tile = f32_tile__avx2,
    .f16_tile = f16_tile__avx2,
    .bf16_tile = bf16_tile__avx2,
    .dot = dot__avx2,
    .axpy = axpy__avx2,
    .f16_to_f32 = f16_to_f32__avx2,
    .bf16_to_f32 = bf16_to_f32__avx2,
    .f32_to_f16 = f32_to_f16__avx2,
    .f32_to_bf16 = f32_to_bf16__avx2,
    .attention_block = attention_block__avx2,
    .attention_exp = attention_exp__avx2,
};
constexpr IsaKernels kAvx512Vnni{
    .isa = Isa::avx512_vnni,
    .suffix = "avx512vnni",
    .quantize_row = quantize_row__avx512vnni,
    .q8_0_tile = nullptr,  // q8_0 and q4_0 run on panels here
    .q4_0_tile = nullptr,
    .q4_1_tile = q4_1_tile__avx512vnni,
    .q5_0_tile = q5_0_tile__avx512vnni,
    .q5_1_tile = q5_1_tile__avx512vnni,
    .iq4_nl_tile = iq4_nl_tile__avx512vnni,
    .q8_0_panel = q8_0_panel__avx512vnni,
    .q4_0_panel = q4_0_panel__avx512vnni,
    .quantize_row_K = quantize_row_K__avx512vnni,
    .q2_K_tile = q2_K_tile__avx512vnni,
    .q3_K_tile = q3_K_tile__avx512vnni,
    .q4_K_tile = q4_K_tile__avx512vnni,
    .q5_K_tile = q5_K_tile__avx512vnni,
    .q6_K_tile = q6_K_tile__avx512vnni,
    .iq4_xs_tile = iq4_xs_tile__avx512vnni,
    .q4_K_panel = q4_K_panel__avx512vnni,
    .q5_K_panel = q5_K_panel__avx512vnni,
    .q6_K_panel = q6_K_panel__avx512vnni,
    .f32_tile = f32_tile__avx512vnni,
    .f16_tile = f16_tile__avx512vnni,
    .bf16_tile = bf16_tile__avx512vnni,
    .f32_panel = f32_panel__avx512vnni,
    .f16_panel = f16_panel__avx512vnni,
    .bf16_panel = bf16_panel__avx512vnni,
    .dot = dot__avx512vnni,
    .axpy = axpy__avx512vnni,
    .f16_to_f32 = f16_to_f32__avx512vnni,
    .bf16_to_f32 = bf16_to_f32__avx512vnni,
    .f32_to_f16 = f32_to_f16__avx512vnni,
    .f32_to_bf16 = f32_to_bf16__avx512vnni,
    .attention_block = attention_block__avx512vnni,
    .attention_exp = attention_exp__avx512vnni,
};
#endif
#if defined(TESSERA_AARCH64)
// sdot tiles for q8_0, q4_0, q4_K and q6_K (the types of the common
// Q4_0/Q8_0/Q4_K_M files), NEON FMA for the float tiles; the other formats'
// tiles are portable's, and their kernel names say so (matmul_kernel_name
// compares with kPortable). The x rows are portable's layouts bit for bit.
constexpr IsaKernels kNeonDotprod{
    .isa = Isa::neon_dotprod,
    .suffix = "neon_dotprod",
    .quantize_row = quantize_row__neon_dotprod,
    .q8_0_tile = q8_0_tile__neon_dotprod,
    .q4_0_tile = q4_0_tile__neon_dotprod,
    .q4_1_tile = q4_1_tile__portable,
    .q5_0_tile = q5_0_tile__portable,
    .q5_1_tile = q5_1_tile__portable,
    .iq4_nl_tile = iq4_nl_tile__portable,
    .quantize_row_K = quantize_row_q8_K,
    .q2_K_tile = q2_K_tile__portable,
    .q3_K_tile = q3_K_tile__portable,
    .q4_K_tile = q4_K_tile__neon_dotprod,
    .q5_K_tile = q5_K_tile__portable,
    .q6_K_tile = q6_K_tile__neon_dotprod,
    .iq4_xs_tile = iq4_xs_tile__portable,
    .f32_tile = f32_tile__neon_dotprod,
    .f16_tile = f16_tile__neon_dotprod,
    .bf16_tile = bf16_tile__neon_dotprod,
    .dot = dot__neon_dotprod,
    .axpy = axpy__neon_dotprod,
    .f16_to_f32 = f16_to_f32__neon_dotprod,
    .bf16_to_f32 = bf16_to_f32__neon_dotprod,
    .f32_to_f16 = f32_to_f16__portable,  // the KV pools' rounding on append (portable's, bit for bit)
    .f32_to_bf16 = f32_to_bf16__portable,
    .attention_block = attention_block__neon_dotprod,
    .attention_exp = attention_exp__neon_dotprod,
};
#endif
}  // namespace

const IsaKernels& portable_kernels() { return kPortable; }

const IsaKernels& active_kernels() {
  switch (active_isa()) {
#if defined(TESSERA_X86)
    case Isa::avx512_vnni: return kAvx512Vnni;
    case Isa::avx2: return kAvx2;
#endif
#if defined(TESSERA_AARCH64)
    case Isa::neon_dotprod: return kNeonDotprod;
#endif
    default: break;
  }
  return kPortable;
}

}  // namespace detail
}  // namespace tessera::kernels::cpu
