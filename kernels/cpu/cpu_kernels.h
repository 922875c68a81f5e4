#pragma once
// Vectorized CPU kernels. The ISA family is probed once at start-up
// (x86: AVX-512 with VNNI, AVX2+FMA; aarch64: NEON with the dot product
// extension; anywhere: portable C++ that any compiler vectorizes);
// TESSERA_CPU_ISA=portable|avx2|avx512_vnni|neon_dotprod overrides the probe (a family the CPU cannot run is refused
// with a message on stderr), and force_isa() lets tests run each path the
// machine can execute. Kernels neither allocate nor lock; they parallelize
// only through the ParallelFor they are given (oneDNN's f32 sgemm, used for
// m >= 64, runs one single-threaded call per chunk of it).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/compute_roofs.h"
#include "core/parallel.h"
#include "kernels/kernel_args.h"

namespace tessera::kernels::cpu {

// avx2 < avx512_vnni on x86; neon_dotprod is aarch64's only family beside
// portable. Order means nothing across architectures: ask runnable_isas().
enum class Isa : uint8_t { portable, avx2, avx512_vnni, neon_dotprod };
std::string_view name(Isa isa);
Isa detect_isa();                   // the best this machine runs
std::vector<Isa> runnable_isas();   // every family this machine can execute
Isa active_isa();
void force_isa(Isa isa);            // must be runnable; for tests and --isa

// The kernel a matmul with these weights runs, e.g. "q8_0_gemm__avx512vnni"
// (batch_invariant: MatmulArgs::tile.batch_invariant set).
std::string matmul_kernel_name(DType w_dtype, int64_t m, bool batch_invariant = false);
// What that kernel multiplies in, so that bench compares it with the right
// compute roof (kernels/cpu/matmul_compute_dtype.cpp).
ComputeDtype matmul_compute_dtype(DType w_dtype, int64_t m);
bool matmul_supports(DType w_dtype);  // f32, f16, bf16, q8_0, q4_0, q4_K
// q8_0/q4_0 quantize the m activation rows to q8 blocks here (a layout
// private to kernels/cpu); the other dtypes need none (0 bytes).
size_t matmul_workspace_bytes(DType w_dtype, int64_t m, int64_t k);
// The weight layout the active ISA family's matmul reads fastest for this
// type (every family reads every layout, some slowly: rows_x16 without
// panel kernels gathers each tile back to rows).
WeightLayout matmul_preferred_layout(DType w_dtype);
// Upper bounds over the paged_attention calls one workspace serves.
struct AttentionWorkspaceBounds {
  int64_t n_tokens = 1;     // query tokens in a call
  int64_t n_seqs = 1;       // sequences in a call
  int64_t max_context = 1;  // every sequence's KV length
  int n_threads = 1;        // at least the num_threads() of the ParallelFor given
};
// Attention scratch: split decode pieces' partial results (each decode
// sequence holds one query token, so there are at most min(n_tokens,
// n_seqs)) and one region per parallel lane (kernels/cpu/attention.cpp).
size_t attention_workspace_bytes(const AttentionParams& p, const AttentionWorkspaceBounds& b);
// How many units paged_attention splits the context of each decode
// sequence (one query token) into, when the call holds n_decode of them and
// runs on n_threads: its 128-position pieces when the call's decodes are too
// few to fill the threads, else 1. It changes who computes what, never a
// result; for tests that must know the split path runs.
int64_t attention_decode_pieces(const AttentionParams& p, int64_t n_decode, int64_t context, int n_threads);
// y = exp(x) elementwise with the active ISA family's vector exp, the one
// paged_attention's softmax uses (x <= 88; 0 below ln(FLT_MIN) = -87.3365
// and at -inf);
// for tests that hold it to std::exp.
void attention_exp(const float* x, float* y, int64_t n);

void embedding(const EmbeddingArgs& a, ParallelFor& pf);
void rms_norm(const RmsNormArgs& a, ParallelFor& pf);
void matmul(const MatmulArgs& a, ParallelFor& pf);
void rope(const RopeArgs& a, ParallelFor& pf);
void kv_append(const KvAppendArgs& a, ParallelFor& pf);
void paged_attention(const AttentionArgs& a, ParallelFor& pf);
void silu_mul(const SiluMulArgs& a, ParallelFor& pf);
// silu_mul over rows of y = [gate (f) | up (f)] into rows of out (f): the
// fused matmul_silu_mul's second half, silu_mul's numbers.
void silu_mul_halves(const float* y, int64_t rows, int64_t f, float* out, ParallelFor& pf);
void add(const AddArgs& a, ParallelFor& pf);
void mul(const MulArgs& a, ParallelFor& pf);
void silu(const UnaryArgs& a, ParallelFor& pf);
void gelu(const UnaryArgs& a, ParallelFor& pf);
void bias_add(const BiasAddArgs& a, ParallelFor& pf);
void softmax(const SoftmaxArgs& a, ParallelFor& pf);
void argmax(const ArgmaxArgs& a, ParallelFor& pf);
void gather_rows(const GatherRowsArgs& a, ParallelFor& pf);
void head_rms_norm(const HeadRmsNormArgs& a, ParallelFor& pf);
void scale(const ScalarOpArgs& a, ParallelFor& pf);
void softcap(const ScalarOpArgs& a, ParallelFor& pf);
void gelu_mul(const GeluMulArgs& a, ParallelFor& pf);
// Fused ops (cpu/fused.cpp); mm.workspace as for matmul, mm.y / k_rot scratch.
void matmul_add(const MatmulAddArgs& a, ParallelFor& pf);
void matmul_silu_mul(const MatmulSiluMulArgs& a, ParallelFor& pf);
void matmul_qkv(const MatmulQkvArgs& a, ParallelFor& pf);
void rope_kv_append(const RopeKvAppendArgs& a, ParallelFor& pf);
void add_rms_norm(const AddRmsNormArgs& a, ParallelFor& pf);
// Elementwise programs (cpu/elementwise_program.cpp): equal to their
// instructions run as the standalone kernels, bit for bit. The epilogue runs
// inside the matmul on each block of y as its dots finish.
void elementwise(const ElementwiseArgs& a, ParallelFor& pf);
void matmul_epilogue(const MatmulEpilogueArgs& a, ParallelFor& pf);

}  // namespace tessera::kernels::cpu
