#pragma once
// The matrix-unit prefill GEMM's geometry (kernels/cuda/matmul_gemm_mma.cu):
// the block tile, where each thread stages x and w in shared memory, and
// which elements of the tile each lane's fragment registers hold for the two
// instructions it uses. Plain integer functions, host and device, so that a
// host program can replay a warp's lanes through the same index math.
//
// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (NVIDIA, 32 lanes; PTX
// ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"): with
// g = lane / 4 and t = lane % 4, A (16 × 16, row) is four f16x2 registers,
// register r holding row g + 8(r % 2), columns c, c + 1 for c = 2t + 8(r / 2);
// B (16 × 8, col) two registers, register r holding rows (k) 2t + 8r and
// 2t + 8r + 1 of column g; C and D four floats, float i at row g + 8(i / 2),
// column 2t + i % 2. In each f16x2 the lower-indexed element is the low half.
//
// v_mfma_f32_16x16x16f16 (AMD CDNA, 64 lanes; the AMD matrix instruction
// calculator): A[i][k] is element k % 4 of lane i + 16(k / 4)'s four halves,
// B[k][j] element k % 4 of lane j + 16(k / 4)'s, D[i][j] float i % 4 of lane
// j + 16(i / 4).
//
// The bf16 forms (mma.sync .f32.bf16.bf16.f32; v_mfma_f32_16x16x16bf16_1k,
// gfx90a) read the same fragments, element for element, as the f16 ones.
//
// The weights are staged as ws[n][k] (a weight row per shared row), which is
// B = wᵀ in the "col" (k-contiguous) order both instructions read, so a lane's
// B registers are consecutive halves of one ws row, as its A registers are
// of one xs row.

#if defined(__CUDACC__) || defined(__HIP__)
#define TS_HD __host__ __device__
#else
#define TS_HD
#endif

namespace tessera::gpu::kernels::mma_layout {

// A 256-thread block computes y[128, 64] walking k 32 at a time.
inline constexpr int kThreads = 256;
inline constexpr int kTileM = 128, kTileN = 64, kTileK = 32;
// Halves per shared row: 32 plus 8 of padding. A row is then 20 words, so
// the 8 rows (g) × 4 words (t) an mma.sync fragment load touches fall in 32
// distinct banks, and rows stay 16-byte aligned (80 bytes) for whole-unit stores.
inline constexpr int kStride = kTileK + 8;

// Staging x: pair p (0 .. kTileM · kTileK / 2) is elements col, col + 1 of
// tile row `row`, so a warp reads 64 consecutive floats of two rows.
inline constexpr int kPairsPerRow = kTileK / 2;
TS_HD constexpr int pair_row(int p) { return p / kPairsPerRow; }
TS_HD constexpr int pair_col(int p) { return 2 * (p % kPairsPerRow); }

// mma.sync: 8 warps as 4 (m) × 2 (n), each a 32 × 32 piece of the tile,
// 2 (m16) × 4 (n8) instructions per 16 of k.
inline constexpr int kMmaWarpM = 32, kMmaWarpN = 32, kMmaTilesM = 2, kMmaTilesN = 4;
TS_HD constexpr int mma_warp_m0(int warp) { return kMmaWarpM * (warp % 4); }
TS_HD constexpr int mma_warp_n0(int warp) { return kMmaWarpN * (warp / 4); }
// A register r: row and first column within the 16 × 16 A tile.
TS_HD constexpr int mma_a_row(int lane, int r) { return lane / 4 + 8 * (r % 2); }
TS_HD constexpr int mma_a_col(int lane, int r) { return 2 * (lane % 4) + 8 * (r / 2); }
// B register r: its column (a weight row, n) and first row (k) within the 16 × 8 B tile.
TS_HD constexpr int mma_b_n(int lane) { return lane / 4; }
TS_HD constexpr int mma_b_k(int lane, int r) { return 2 * (lane % 4) + 8 * r; }
// Accumulator i: row and column within the 16 × 8 C tile.
TS_HD constexpr int mma_c_row(int lane, int i) { return lane / 4 + 8 * (i / 2); }
TS_HD constexpr int mma_c_col(int lane, int i) { return 2 * (lane % 4) + i % 2; }

// MFMA: 4 waves as 2 (m) × 2 (n), each a 64 × 32 piece of the tile,
// 4 (m16) × 2 (n16) instructions per 16 of k.
inline constexpr int kMfmaWaveM = 64, kMfmaWaveN = 32, kMfmaTilesM = 4, kMfmaTilesN = 2;
TS_HD constexpr int mfma_wave_m0(int wave) { return kMfmaWaveM * (wave % 2); }
TS_HD constexpr int mfma_wave_n0(int wave) { return kMfmaWaveN * (wave / 2); }
// A's row (m) and B's column (n) a lane holds, and the first of its 4 consecutive k.
TS_HD constexpr int mfma_ab_mn(int lane) { return lane % 16; }
TS_HD constexpr int mfma_ab_k(int lane) { return 4 * (lane / 16); }
// Accumulator float i: row and column within the 16 × 16 D tile.
TS_HD constexpr int mfma_d_row(int lane, int i) { return 4 * (lane / 16) + i; }
TS_HD constexpr int mfma_d_col(int lane) { return lane % 16; }

// f32 bits to bf16 bits, round to nearest even (NaN stays a quiet NaN).
TS_HD constexpr unsigned short bf16_bits_rn(unsigned int f) {
  if ((f & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((f >> 16) | 0x40u);
  return (unsigned short)((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

static_assert(4 * kMmaWarpM == kTileM && 2 * kMmaWarpN == kTileN && kThreads / 32 == 8);
static_assert(16 * kMmaTilesM == kMmaWarpM && 8 * kMmaTilesN == kMmaWarpN);
static_assert(2 * kMfmaWaveM == kTileM && 2 * kMfmaWaveN == kTileN && kThreads / 64 == 4);
static_assert(16 * kMfmaTilesM == kMfmaWaveM && 16 * kMfmaTilesN == kMfmaWaveN);
static_assert(kTileK % 16 == 0 && (kStride * 2) % 16 == 0);

}  // namespace tessera::gpu::kernels::mma_layout
