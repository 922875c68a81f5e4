#pragma once
// Private to kernels/cpu: the table of inner kernels one ISA family
// provides. matmul.cpp and the other op files do the blocking and the
// threading once, portably; each ISA file fills in only the innermost tiles.
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tessera::kernels::cpu::detail {

// Activation rows quantized for integer dot products, one row per x row, in
// the matmul workspace. Row r starts at base + r * qx_row_bytes(k) and holds,
// for its nb = k/32 blocks:
//   int8_t  qs[nb * 32]    q = round(x / d), d = max|x| / 127 (as ggml's q8_0)
//   int32_t corr[nb * 8]   per 4-element lane l: -c * (q[4l] + ... + q[4l+3]),
//                          c = qx_correction(w_dtype); it turns an unsigned x
//                          signed dot (VNNI's dpbusd) on offset weights exact
//   float   d[nb]          the scale, kept in f32 (ggml rounds it to f16)
// For q4_1 and q5_1 weights (y = d * q + m: no offset to correct, but the
// min needs sum(x)) the corr region holds instead
//   float   s[nb]          s = d * sum(q), so that a block's min term is
//                          m * s (ggml's q8_1 keeps s the same way)
// For the other weight types (not q8_0, q4_0) the avx512_vnni family folds corr to its
// tile's lanes, int32_t corr[nb * 4], lane j = lanes j + (j + 4) of the
// above (that tile's lane j takes bytes 4j..4j+3 and 16+4j..19+4j), so that
// 4 x rows (52 bytes a block each) sit in L1 beside the weights; it keeps s
// per lane too, float s[nb * 4], lane j = d * (the codes of its lane j), so
// that its tile's lanes take the min term as they take the dot.
// For q8_0 and q4_0 weights the avx512_vnni family uses a lanes layout
// instead, for its panel kernels (block32_panel_gemm__avx512vnni.cpp), whose
// vector lanes are weight rows and which take a block's whole dot in a lane:
//   int8_t  qs[nb * 32]    as above
//   int32_t corr[nb]       -c * (q[0] + ... + q[31]), c = qx_correction(w_dtype)
//   float   d[nb]          the scale
// A layout is read only by the tiles of the ISA family whose quantize_row wrote it.
// (Unnamed namespace: the ISA files include these under their own target
// flags, and internal linkage keeps each copy in its own file.)
namespace {
// Room for every layout (68 bytes a block at most), and a block over.
inline int64_t qx_row_bytes(int64_t k) {
  const int64_t nb = k / kQK8_0;
  return ((nb + 1) * (32 + 32 + 4) + 63) / 64 * 64;
}
// What a weight code is offset by where it enters an unsigned x signed dot:
// q8_0 weights enter dpbusd as q + 128, q4_0 weights as their raw nibbles
// q + 8, q5_0's as their raw 5-bit codes q + 16, iq4_nl's as table value +
// 128 (avx512_vnni; the avx2 and portable tiles dot signed values and leave
// corr unread). q4_1 and q5_1 codes are not offset: their rows hold s.
inline int32_t qx_correction(DType w_dtype) {
  switch (w_dtype) {
    case DType::q4_0: return 8;
    case DType::q5_0: return 16;
    case DType::q4_1:
    case DType::q5_1: return 0;
    default: return 128;
  }
}
// Whether x rows for these weights hold s (d * sum(q)) in corr's place.
inline bool qx_holds_sums(DType w_dtype) { return w_dtype == DType::q4_1 || w_dtype == DType::q5_1; }
inline const int8_t* qx_qs(const std::byte* row) { return reinterpret_cast<const int8_t*>(row); }
inline const int32_t* qx_corr(const std::byte* row, int64_t nb) {
  return reinterpret_cast<const int32_t*>(row + nb * 32);
}
inline const float* qx_d(const std::byte* row, int64_t nb) { return reinterpret_cast<const float*>(row + nb * 64); }
inline const float* qx_s(const std::byte* row, int64_t nb) { return reinterpret_cast<const float*>(row + nb * 32); }
// The lanes layout's corr and d.
inline const int32_t* qx_lane_corr(const std::byte* row, int64_t nb) {
  return reinterpret_cast<const int32_t*>(row + nb * 32);
}
inline const float* qx_lane_d(const std::byte* row, int64_t nb) { return reinterpret_cast<const float*>(row + nb * 36); }
}  // namespace

// Where a quantized tile finds its weight blocks: row r's block b is at
// base + r * row_stride + b * block_stride. The standard layout has
// row_stride = a row's bytes, block_stride = one block; rows_x4
// (core/weight_layout.h) has row_stride = one block, block_stride = the
// group's width in blocks. One tile per ISA serves both, with the same dots
// in the same order. (A plain struct: its helpers below are per-ISA copies.)
struct QWeightRows {
  const std::byte* base = nullptr;
  int64_t row_stride = 0, block_stride = 0;
};

namespace {
inline QWeightRows weight_row(const QWeightRows& w, int r) { return {w.base + r * w.row_stride, w.row_stride, w.block_stride}; }

// One weight row's blocks, indexed like an array: rows[r][b].
template <typename Block>
struct BlockRow {
  const std::byte* p = nullptr;
  int64_t stride = 0;
  const Block& operator[](int64_t b) const { return *reinterpret_cast<const Block*>(p + b * stride); }
};
template <typename Block, int NR>
inline void block_rows(const QWeightRows& w, BlockRow<Block> (&rows)[NR]) {
  for (int r = 0; r < NR; ++r) rows[r] = {w.base + r * w.row_stride, w.block_stride};
}
}  // namespace

// Up to 16 weight rows (nr) for a panel kernel: a rows_x16 group read in
// place at `packed` (core/weight_layout.h; its width is nr), or, with
// packed null, row r's block b at row[r] + b * block_stride[r] (the
// standard and rows_x4 layouts: in rows_x4 a short last group's rows have
// a stride of their own), which the kernel gathers to that form first.
struct QPanelRows {
  const std::byte* packed = nullptr;
  const std::byte* row[16] = {};
  int64_t block_stride[16] = {};
  int nr = 0;
};

// Quantizes one x row of k floats (k a multiple of 32) for weights of w_dtype.
using QuantizeRowFn = void (*)(DType w_dtype, const float* x, int64_t k, std::byte* row);

// y[i * ldy + r] = dot(x row i, w row r) for i < mr <= 4, r < nr: nr <= 4
// for the qx tiles (rows_x4 groups are 4 rows), any count for the q8_K
// tiles (standard layout only).
// Quantized: x rows are qx rows (stride x_stride bytes), w rows are blocks.
using QTileFn = void (*)(const std::byte* x, int64_t x_stride, int mr, const QWeightRows& w, int nr, int64_t k, float* y,
                         int64_t ldy);
// y[i * ldy + 16 * g + r] = dot(x row i, groups[g] row r) for every i < m,
// g < n_groups, r < groups[g].nr <= 16: each group's rows are unpacked per
// k-slice and block of x rows, and the block's rows pass over them. Each
// output takes the same operations whatever m (GEMV included).
using QPanelFn = void (*)(const std::byte* x, int64_t x_stride, int64_t m, const QPanelRows* groups, int n_groups,
                          int64_t k, float* y, int64_t ldy);
// Plain: x rows are f32 (stride ldx floats), w rows are f32/f16/bf16.
using FTileFn = void (*)(const float* x, int64_t ldx, int mr, const std::byte* w, int64_t w_stride, int nr, int64_t k,
                         float* y, int64_t ldy);
// y[i * ldy + r] = dot(x row i, w row r) for every i < m, r < n: x rows as
// q8_K blocks (as for the q8_K tiles), w rows in their GGUF layout (row r at
// w + r * w_row_bytes). For prefill: groups of 16 weight rows are unpacked
// per k-slice into panels that every x row passes over. Each output takes
// the integer sums and float steps of the same family's tile for that type,
// so its bits are the tile's whatever m (k_quant_panel_gemm__avx512vnni.cpp).
using KPanelFn = void (*)(const std::byte* x, int64_t x_stride, int64_t m, const std::byte* w, int64_t w_row_bytes,
                          int64_t n, int64_t k, float* y, int64_t ldy);

// y[i * ldy + r] = dot(x row i, w row r) for every i < m, r < n: x rows f32
// (stride ldx floats), w rows f32, f16 or bf16, n <= kFPanelCallRows, the
// call's first row a multiple of 16 (float_panel_gemm__avx512vnni.cpp).
// Weights in rows (row r at w + r * w_row_bytes) are unpacked per k-slice
// into panels whose vector lanes are 16 rows; in rows_x16 (x16) a group of
// 16 is such a panel already and is read in place (its last group, of
// n % 16 rows, copied). Every x row passes over the panels. Each output is
// summed element by element in k order from zero, whatever m, the layout or
// the call, so a row's bits never depend on the step.
struct FPanelCall {
  const float* x = nullptr;
  int64_t ldx = 0, m = 0;
  const std::byte* w = nullptr;
  int64_t w_row_bytes = 0, n = 0, k = 0;
  bool x16 = false;
  float* y = nullptr;
  int64_t ldy = 0;
  // Dwords a k-slice (the tiling pass's cache block, matmul.cpp): a
  // multiple of 16 up to kFPanelSliceDwords; 0 takes that most.
  int64_t slice_dwords = 0;
};
constexpr int64_t kFPanelCallRows = 128;
// A call's turned panels a k-slice at most (kFPanelCallRows / 16 panels of
// this many 64-byte vectors, 64 KiB), held on the running thread's stack.
constexpr int64_t kFPanelSliceDwords = 128;
using FPanelFn = void (*)(const FPanelCall& c);
// One block of one KV head for one query token: the query heads of the KV
// head's group fold the block's positions [lo, n) into their online-softmax
// states (kernels/cpu/attention.cpp). K and V are read in the pool's dtype
// and widened in registers; each head's arithmetic is its own and in one
// order, whatever heads share the call.
struct AttentionBlock {
  DType kv_dtype = DType::f32;            // f32, f16, bf16, q8_0 or fp8_e4m3
  const void* k = nullptr;                // offset o's K row at k + o * kv_stride elements
  const void* v = nullptr;                // and its V row at v + o * kv_stride
  int64_t kv_stride = 0;
  int32_t lo = 0, n = 0;                  // the offsets folded (lo > 0: a window starts in the block)
  int32_t head_dim = 0, heads = 0;
  const float* q = nullptr;               // query head h at q + h * q_stride
  int64_t q_stride = 0;
  float* acc = nullptr;                   // its unnormalized sum of V rows at acc + h * acc_stride
  int64_t acc_stride = 0;
  float* m = nullptr;                     // its running max at m[h * ml_stride], its sum of
  float* l = nullptr;                     // exponentials at l[h * ml_stride]
  int64_t ml_stride = 0;
  float scale = 0.0f;                     // scores are dot * scale, or dot / sqrt_hd when scale is 0
  float sqrt_hd = 1.0f;
  float softcap = 0.0f, inv_softcap = 0.0f;  // softcap * tanh(score * inv_softcap) when softcap > 0
  float* scratch = nullptr;               // attention_block_scratch_floats(block size)
  // Bytes to ask the memory for while this block is scored, spread over
  // its positions: [ahead_k, + ahead_bytes) and [ahead_v, + ahead_bytes)
  // (a later call's rows; none when ahead_bytes is 0). A hint only.
  const char* ahead_k = nullptr;
  const char* ahead_v = nullptr;
  int64_t ahead_bytes = 0;
};
// Query heads a kernel folds at once, and the widest vector (f32 lanes) of any family.
constexpr int kAttentionHeadSet = 4, kAttentionMaxLanes = 16;
namespace {
// The scratch an AttentionBlock kernel needs for blocks of block_size positions.
inline int64_t attention_block_scratch_floats(int64_t block_size) {
  const int64_t padded = (block_size + kAttentionMaxLanes - 1) / kAttentionMaxLanes * kAttentionMaxLanes;
  return (int64_t)kAttentionHeadSet * (kAttentionMaxLanes * kAttentionMaxLanes + padded);
}
}  // namespace
using AttentionBlockFn = void (*)(const AttentionBlock& b);

struct IsaKernels {
  Isa isa;
  const char* suffix;  // kernel-name suffix, e.g. "avx512vnni"
  QuantizeRowFn quantize_row;
  // x rows as qx rows (above), one block of 32 per weight block.
  QTileFn q8_0_tile, q4_0_tile, q4_1_tile, q5_0_tile, q5_1_tile, iq4_nl_tile;
  // Where set, these run q8_0 / q4_0 at every row count instead of the tiles
  // (null tiles then), over the lanes layout.
  QPanelFn q8_0_panel = nullptr, q4_0_panel = nullptr;
  // x rows as q8_K blocks (q8_K_activations.h), in the element order this
  // family's quantize_row_K writes them, weights in their GGUF layout.
  QuantizeRowFn quantize_row_K;
  QTileFn q2_K_tile, q3_K_tile, q4_K_tile, q5_K_tile, q6_K_tile, iq4_xs_tile;
  // Where set, these run those types from matmul.cpp's threshold of x rows
  // up (the tiles below it), over the same q8_K rows.
  KPanelFn q4_K_panel = nullptr, q5_K_panel = nullptr, q6_K_panel = nullptr;
  FTileFn f32_tile, f16_tile, bf16_tile;
  // Where set, these run those types at every row count instead of the
  // tiles. bf16_panel multiplies in bf16 (x rounded to bf16, as ggml does
  // for bf16 weights) where bf16_panel_dots().
  FPanelFn f32_panel = nullptr, f16_panel = nullptr, bf16_panel = nullptr;
  float (*dot)(const float* a, const float* b, int64_t n);
  void (*axpy)(float a, const float* x, float* y, int64_t n);  // y += a * x
  void (*f16_to_f32)(const uint16_t* src, float* dst, int64_t n);
  void (*bf16_to_f32)(const uint16_t* src, float* dst, int64_t n);
  // Rounded to nearest even, bit for bit as core/half.h (KV pools are stored so).
  void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n);
  void (*f32_to_bf16)(const float* src, uint16_t* dst, int64_t n);
  AttentionBlockFn attention_block;
  void (*attention_exp)(const float* x, float* y, int64_t n);  // the vector exp attention_block uses
};

// The table of active_isa() (isa.cpp assembles the tables from the kernels below).
const IsaKernels& active_kernels();
// The portable family's table: a family that leaves a slot to portable's
// kernel holds the same pointer, which is how kernel names tell them apart.
const IsaKernels& portable_kernels();

// Each ISA family's kernels, named <dtype>_<op>__<isa>, defined in the file of that name.
void quantize_row__portable(DType w_dtype, const float* x, int64_t k, std::byte* row);
void q8_0_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_0_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_1_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q5_0_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q5_1_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void iq4_nl_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q2_K_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q3_K_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_K_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q5_K_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q6_K_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void iq4_xs_tile__portable(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void f32_tile__portable(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
void f16_tile__portable(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
void bf16_tile__portable(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
float dot__portable(const float* a, const float* b, int64_t n);
void axpy__portable(float a, const float* x, float* y, int64_t n);
void f16_to_f32__portable(const uint16_t* src, float* dst, int64_t n);
void bf16_to_f32__portable(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16__portable(const float* src, uint16_t* dst, int64_t n);
void f32_to_bf16__portable(const float* src, uint16_t* dst, int64_t n);
void attention_block__portable(const AttentionBlock& b);
void attention_exp__portable(const float* x, float* y, int64_t n);

#if defined(TESSERA_X86)
void quantize_row__avx2(DType w_dtype, const float* x, int64_t k, std::byte* row);
void q8_0_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_0_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_1_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q5_0_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q5_1_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void iq4_nl_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q2_K_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q3_K_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_K_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q5_K_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q6_K_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void iq4_xs_tile__avx2(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void f32_tile__avx2(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
void f16_tile__avx2(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
void bf16_tile__avx2(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
float dot__avx2(const float* a, const float* b, int64_t n);
void axpy__avx2(float a, const float* x, float* y, int64_t n);
void f16_to_f32__avx2(const uint16_t* src, float* dst, int64_t n);
void bf16_to_f32__avx2(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16__avx2(const float* src, uint16_t* dst, int64_t n);
void f32_to_bf16__avx2(const float* src, uint16_t* dst, int64_t n);
void attention_block__avx2(const AttentionBlock& b);
void attention_exp__avx2(const float* x, float* y, int64_t n);

void quantize_row__avx512vnni(DType w_dtype, const float* x, int64_t k, std::byte* row);
void quantize_row_K__avx512vnni(DType w_dtype, const float* x, int64_t k, std::byte* row);
void q8_0_panel__avx512vnni(const std::byte*, int64_t, int64_t, const QPanelRows*, int, int64_t, float*, int64_t);
void q4_0_panel__avx512vnni(const std::byte*, int64_t, int64_t, const QPanelRows*, int, int64_t, float*, int64_t);
void q4_1_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q5_0_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q5_1_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void iq4_nl_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q2_K_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q3_K_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_K_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q5_K_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q6_K_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void iq4_xs_tile__avx512vnni(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_K_panel__avx512vnni(const std::byte*, int64_t, int64_t, const std::byte*, int64_t, int64_t, int64_t, float*, int64_t);
void q5_K_panel__avx512vnni(const std::byte*, int64_t, int64_t, const std::byte*, int64_t, int64_t, int64_t, float*, int64_t);
void q6_K_panel__avx512vnni(const std::byte*, int64_t, int64_t, const std::byte*, int64_t, int64_t, int64_t, float*, int64_t);
void f32_tile__avx512vnni(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
void f16_tile__avx512vnni(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
void bf16_tile__avx512vnni(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
void f32_panel__avx512vnni(const FPanelCall&);
void f16_panel__avx512vnni(const FPanelCall&);
void bf16_panel__avx512vnni(const FPanelCall&);
// Whether bf16_panel__avx512vnni multiplies in bf16 (vdpbf16ps) rather than
// widening to f32: only where the CPU has AVX512-BF16 (Cooper Lake,
// Sapphire Rapids, Zen 4 and later) and TESSERA_CPU_BF16_DOT=1 asks for it,
// since rounding x to bf16 moves a model's logits past the zoo's bf16 bound
// (docs/backends.md, "Float panels").
bool bf16_panel_dots();
float dot__avx512vnni(const float* a, const float* b, int64_t n);
void axpy__avx512vnni(float a, const float* x, float* y, int64_t n);
void f16_to_f32__avx512vnni(const uint16_t* src, float* dst, int64_t n);
void bf16_to_f32__avx512vnni(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16__avx512vnni(const float* src, uint16_t* dst, int64_t n);
void f32_to_bf16__avx512vnni(const float* src, uint16_t* dst, int64_t n);
void attention_block__avx512vnni(const AttentionBlock& b);
void attention_exp__avx512vnni(const float* x, float* y, int64_t n);
#endif

#if defined(TESSERA_AARCH64)
// The neon_dotprod family: files *__neon_dotprod.cpp (-march=armv8.2-a+dotprod).
void quantize_row__neon_dotprod(DType w_dtype, const float* x, int64_t k, std::byte* row);
void q8_0_tile__neon_dotprod(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_0_tile__neon_dotprod(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q4_K_tile__neon_dotprod(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void q6_K_tile__neon_dotprod(const std::byte*, int64_t, int, const QWeightRows&, int, int64_t, float*, int64_t);
void f32_tile__neon_dotprod(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
void f16_tile__neon_dotprod(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
void bf16_tile__neon_dotprod(const float*, int64_t, int, const std::byte*, int64_t, int, int64_t, float*, int64_t);
float dot__neon_dotprod(const float* a, const float* b, int64_t n);
void axpy__neon_dotprod(float a, const float* x, float* y, int64_t n);
void f16_to_f32__neon_dotprod(const uint16_t* src, float* dst, int64_t n);
void bf16_to_f32__neon_dotprod(const uint16_t* src, float* dst, int64_t n);
void attention_block__neon_dotprod(const AttentionBlock& b);
void attention_exp__neon_dotprod(const float* x, float* y, int64_t n);
#endif

}  // namespace tessera::kernels::cpu::detail
