#pragma once
// Element types and the GGUF quant block layouts, byte for byte, so that
// GGUF files load without conversion (docs/formats.md lists the layouts).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

// The order is the enum's value (stable: IR text names types, never numbers).
enum class DType : uint8_t {
  f32, f16, bf16, i8, i32,
  q8_0, q4_0, q4_K,
  q4_1, q5_0, q5_1, iq4_nl,          // 32-element blocks
  q2_K, q3_K, q5_K, q6_K, iq4_xs,    // 256-element super-blocks
  fp8_e4m3,                          // 32-element blocks, KV pools only (no weight kernels)
};
inline constexpr int kDTypeCount = 18;

struct DTypeTraits {
  std::string_view name;  // as printed in the IR and by the CLI
  uint32_t block_elems;   // elements per block; 1 for plain types
  uint32_t block_bytes;   // bytes per block
  bool quantized;
};

const DTypeTraits& traits(DType t);
inline std::string_view name(DType t) { return traits(t).name; }
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes taken by `n` consecutive elements; `n` must be a whole number of blocks.
inline uint64_t bytes_for(DType t, int64_t n) {
  const auto& tr = traits(t);
  return static_cast<uint64_t>(n) / tr.block_elems * tr.block_bytes;
}
inline bool is_whole_blocks(DType t, int64_t n) { return n % traits(t).block_elems == 0; }

inline constexpr int kQK8_0 = 32;
inline constexpr int kQK4_0 = 32;
inline constexpr int kQK_K = 256;
inline constexpr int kQK4_NL = 32;

// ggml's block_q8_0: y = d * q.
struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

// A KV pool's fp8 block (--kv-type fp8_e4m3): y = d * e4m3(q), q in OCP FP8
// E4M3 (bias 7, max 448, no infinities, NaN 0x7F/0xFF). The scale is f16 as
// q8_0's: its rounding (2^-11) is far below E4M3's step (2^-4), and the
// block keeps q8_0's 34 bytes, so both 8-bit KV types share one row size.
struct BlockFp8E4M3 {
  uint16_t d;  // f16 scale, amax / 448
  uint8_t qs[32];
};
static_assert(sizeof(BlockFp8E4M3) == 34);

// ggml's block_q4_0: y = d * (q - 8); element j in the low nibble of qs[j],
// element j+16 in the high nibble of qs[j].
struct BlockQ4_0 {
  uint16_t d;  // f16 scale
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// ggml's block_q4_K: 8 sub-blocks of 32 with 6-bit scales and mins.
struct BlockQ4_K {
  uint16_t d;     // f16 super-block scale for the scales
  uint16_t dmin;  // f16 super-block scale for the mins
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// ggml's block_q4_1: y = d * q + m; nibbles as q4_0.
struct BlockQ4_1 {
  uint16_t d;  // f16 scale
  uint16_t m;  // f16 min
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// ggml's block_q5_0: y = d * (q - 16), q = nibble | (bit j of qh) << 4; bit
// j of the little-endian 32-bit qh is element j's fifth bit.
struct BlockQ5_0 {
  uint16_t d;     // f16 scale
  uint8_t qh[4];  // fifth bits of the 32 elements
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);

// ggml's block_q5_1: y = d * q + m, q as q5_0 without the offset.
struct BlockQ5_1 {
  uint16_t d;  // f16 scale
  uint16_t m;  // f16 min
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);

// ggml's block_iq4_nl: y = d * kIq4nlValues[nibble]; nibbles as q4_0.
struct BlockIq4_NL {
  uint16_t d;  // f16 scale
  uint8_t qs[kQK4_NL / 2];
};
static_assert(sizeof(BlockIq4_NL) == 18);

// The 16 non-uniform levels of iq4_nl and iq4_xs.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// ggml's block_q2_K: 16 sub-blocks of 16, 2-bit codes; scales[i] holds the
// sub-block's 4-bit scale (low nibble) and 4-bit min (high nibble).
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;     // f16 super-block scale for the scales
  uint16_t dmin;  // f16 super-block scale for the mins
};
static_assert(sizeof(BlockQ2_K) == 84);

// ggml's block_q3_K: 16 sub-blocks of 16, 2 low bits in qs, the high bit in
// hmask (set means +0, clear means -4), 6-bit signed scales packed in 12 bytes.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;  // f16 super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110);

// ggml's block_q5_K: q4_K's scales and mins, a fifth bit per element in qh.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// ggml's block_q6_K: 16 sub-blocks of 16, 4 low bits in ql, 2 high bits in
// qh, signed 8-bit scales; y = d * scale * (q - 32).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// ggml's block_iq4_xs: 8 sub-blocks of 32 with 6-bit scales (low 4 bits in
// scales_l, high 2 in scales_h), codes into kIq4nlValues.
struct BlockIq4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIq4_XS) == 136);

}  // namespace tessera
