// KV pools of f32, f16, bf16, q8_0 or fp8_e4m3 (core/ops.h; pc.kv_type 0 to
// 4), bound as arrays of 32-bit words: an f32 element is a word, two 16-bit
// elements share one (element e in the low half when e is even); the 8-bit
// types are 34-byte blocks of 32 elements (kernels/kv_element.h: an f16
// scale d, then 32 bytes), element e at byte (e / 32) * 34 + 2 + e % 32,
// the scale's two bytes always in one word (a block starts at an even byte).
// Elements are addressed from kv_base(the binding's byte offset; a whole
// number of blocks for the 8-bit types, which the host checks). Stores round
// to nearest even, bit for bit as core/half.h, so every device holds the
// same 16-bit pools.
// Include after the shader's push constants, which must hold kv_type.

const uint KV_F32 = 0u;
const uint KV_F16 = 1u;
const uint KV_BF16 = 2u;
const uint KV_Q8_0 = 3u;
const uint KV_FP8 = 4u;

bool kv_blocks() { return pc.kv_type >= KV_Q8_0; }
uint kv_base(uint off_bytes) {
  return kv_blocks() ? off_bytes / 34u * 32u : pc.kv_type == KV_F32 ? off_bytes >> 2 : off_bytes >> 1;
}
uint kv_word_of(uint e) { return pc.kv_type == KV_F32 ? e : e >> 1; }

// The 8-bit types: the byte of element e's block scale and of its value.
uint kv_scale_byte(uint e) { return (e >> 5) * 34u; }
uint kv_q_byte(uint e) { return (e >> 5) * 34u + 2u + (e & 31u); }

// OCP FP8 E4M3 (bias 7, subnormals m * 2^-9), exact in f32; 0x7F / 0xFF
// (what the append stores for a NaN) read as NaN, as the reference reads them.
float fp8_e4m3_value(uint b) {
  if ((b & 0x7Fu) == 0x7Fu) return uintBitsToFloat(0x7FC00000u);
  const uint e = (b >> 3) & 15u, m = b & 7u;
  const float mag = e == 0u ? float(m) * (1.0 / 512.0) : ldexp(float(8u + m), int(e) - 10);
  return (b & 0x80u) != 0u ? -mag : mag;
}

// d * q for a scale word (the scale's half at bit `shift`) and a value byte.
float kv_block_value(uint scale_word, uint shift, uint q) {
  const float d = unpackHalf2x16((scale_word >> shift) & 0xffffu).x;
  return pc.kv_type == KV_Q8_0 ? d * float(int(q << 24) >> 24) : d * fp8_e4m3_value(q);
}

#define KV_BYTE(pool, b) ((pool[(b) >> 2] >> (((b) & 3u) * 8u)) & 0xffu)
#define KV_LOAD_BLOCK(pool, e) \
  kv_block_value(pool[kv_scale_byte(e) >> 2], (kv_scale_byte(e) & 3u) * 8u, KV_BYTE(pool, kv_q_byte(e)))

float kv_value(uint word, uint e) {
  if (pc.kv_type == KV_F32) return uintBitsToFloat(word);
  const uint h = (e & 1u) != 0u ? word >> 16 : word & 0xffffu;
  return pc.kv_type == KV_F16 ? unpackHalf2x16(h).x : uintBitsToFloat(h << 16);
}

// Element e of a pool bound as `uint pool[]`, as f32.
#define KV_LOAD(pool, e) (kv_blocks() ? KV_LOAD_BLOCK(pool, e) : kv_value(pool[kv_word_of(e)], (e)))

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

// kernels/kv_element.h's f32_to_fp8_e4m3: to nearest even, saturating at 448, NaN to 0x7F.
uint fp8_e4m3_bits_rne(float x) {
  const uint sign = (floatBitsToUint(x) >> 24) & 0x80u;
  if (isnan(x)) return 0x7fu;
  const float a = abs(x);
  if (a >= 448.0) return sign | 0x7eu;
  if (a < 0.015625) return sign | uint(roundEven(a * 512.0));
  const uint u = floatBitsToUint(a);
  const uint r = u + 0x7ffffu + ((u >> 20) & 1u);
  const int e = int(r >> 23) - 120;
  const uint m = (r >> 20) & 7u;
  if (e > 15 || (e == 15 && m == 7u)) return sign | 0x7eu;
  return sign | (uint(e) << 3) | m;
}

// One byte of a pool word, other invocations writing that word's other bytes
// alongside (two 34-byte blocks share a word where one ends at byte 2 of it).
#define KV_PUT_BYTE(pool, b, val)                        \
  {                                                      \
    const uint w_ = (b) >> 2, s_ = ((b) & 3u) * 8u;      \
    atomicAnd(pool[w_], ~(0xffu << s_));                 \
    atomicOr(pool[w_], (uint(val) & 0xffu) << s_);       \
  }

// kernels/kv_element.h's block quantization of 32 values into a block's 34
// bytes: q8_0 as ggml (d = amax / 127, q = round(x / d) half away from 0),
// fp8_e4m3 by the stored d = amax / 448. GLSL's division is not correctly
// rounded (2.5 ulp allowed), so a value on a rounding tie may land one step
// from the host's.
void kv_quantize_block(float x[32], out uint bytes[34]) {
  float amax = 0.0;
  for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(x[j]));
  uint dbits;
  float d, id;
  if (pc.kv_type == KV_Q8_0) {
    d = amax / 127.0;
    dbits = f16_bits_rne(d);
    id = d != 0.0 ? 1.0 / d : 0.0;
  } else {
    dbits = f16_bits_rne(amax / 448.0);
    d = unpackHalf2x16(dbits).x;
  }
  bytes[0] = dbits & 0xffu;
  bytes[1] = dbits >> 8;
  for (uint j = 0u; j < 32u; ++j) {
    if (pc.kv_type == KV_Q8_0) {
      const float v = x[j] * id;
      bytes[2u + j] = uint(int(sign(v) * floor(abs(v) + 0.5))) & 0xffu;
    } else {
      bytes[2u + j] = d > 0.0 ? fp8_e4m3_bits_rne(x[j] / d) : 0u;
    }
  }
}
