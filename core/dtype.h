#pragma once
// Element types and the GGUF quant block layouts, byte for byte, so that
// GGUF files load without conversion (docs/formats.md lists the layouts).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

enum class DType : uint8_t { f32, f16, bf16, i8, i32, q8_0, q4_0, q4_K };
inline constexpr int kDTypeCount = 8;

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

// ggml's block_q8_0: y = d * q.
struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

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

}  // namespace tessera
