// KV pools of f32, f16 or bf16 (core/ops.h; pc.kv_type 0, 1 or 2), bound as
// arrays of 32-bit words: an f32 element is a word, two 16-bit elements
// share one (element e in the low half when e is even). Elements are
// addressed from kv_base(the binding's byte offset). Stores round to nearest
// even, bit for bit as core/half.h, so every device holds the same pools.
// Include after the shader's push constants, which must hold kv_type.

const uint KV_F32 = 0u;
const uint KV_F16 = 1u;
const uint KV_BF16 = 2u;

uint kv_base(uint off_bytes) { return pc.kv_type == KV_F32 ? off_bytes >> 2 : off_bytes >> 1; }
uint kv_word_of(uint e) { return pc.kv_type == KV_F32 ? e : e >> 1; }

float kv_value(uint word, uint e) {
  if (pc.kv_type == KV_F32) return uintBitsToFloat(word);
  const uint h = (e & 1u) != 0u ? word >> 16 : word & 0xffffu;
  return pc.kv_type == KV_F16 ? unpackHalf2x16(h).x : uintBitsToFloat(h << 16);
}

// Element e of a pool bound as `uint pool[]`, as f32.
#define KV_LOAD(pool, e) kv_value(pool[kv_word_of(e)], (e))

// core/half.h's f32_to_f16: round to nearest even, overflow to infinity, NaN kept quiet.
uint f16_bits_rne(float f) {
  const uint x = floatBitsToUint(f);
  const uint sign = (x >> 16) & 0x8000u;
  const uint absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return sign | 0x7e00u | ((absx >> 13) & 0x3ffu);
  if (absx >= 0x477ff000u) return sign | 0x7c00u;
  if (absx < 0x38800000u) {
    if (absx < 0x33000000u) return sign;
    const uint m = (absx & 0x7fffffu) | 0x800000u;
    const uint shift = 126u - (absx >> 23);
    uint r = m >> shift;
    const uint rem = m & ((1u << shift) - 1u), half_ulp = 1u << (shift - 1u);
    if (rem > half_ulp || (rem == half_ulp && (r & 1u) != 0u)) ++r;
    return sign | r;
  }
  uint r = absx - 0x38000000u;
  const uint rem = r & 0x1fffu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u)) ++r;
  return sign | r;
}

// core/half.h's f32_to_bf16.
uint bf16_bits_rne(float f) {
  const uint x = floatBitsToUint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

// Two consecutive elements (the first at an even index) as one 16-bit pool word.
uint kv_pack2(float lo, float hi) {
  if (pc.kv_type == KV_F16) return f16_bits_rne(lo) | (f16_bits_rne(hi) << 16);
  return bf16_bits_rne(lo) | (bf16_bits_rne(hi) << 16);
}
