// The GGUF block types read one 32-element unit at a time (included by
// weights.glsl, which has the word readers): q4_1, q5_0, q5_1 and iq4_nl,
// whose blocks are such a unit, and q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs,
// whose 256-element super-blocks hold eight, each with its own scale (q2_K,
// q3_K and q6_K: one per 16-element half) and, for some, a min. Layouts are
// core/dtype.h's, byte for byte; the arithmetic is core/quant.cpp's
// dequantize_row_*, so that scale * code + min is the reference's value.
//
// A unit is read as its header (w_unit: the scales, where its codes lie) and
// then quarters of eight codes (w_quarter), so a GEMM that stages eight
// elements reads only their bytes, and a GEMV reads the header once for 32.

// Whether WTYPE is read through w_unit / w_quarter.
const bool W_UNITS = WTYPE >= WT_Q4_K;
// Block types whose two 16-element halves of a unit have scales of their own.
const bool W_SPLIT = WTYPE == WT_Q2_K || WTYPE == WT_Q3_K || WTYPE == WT_Q6_K;
// Block types with a min: y = scale * code + min, min nonzero.
const bool W_MIN = WTYPE == WT_Q4_1 || WTYPE == WT_Q5_1 || WTYPE == WT_Q4_K || WTYPE == WT_Q5_K || WTYPE == WT_Q2_K;
// 32-element blocks whose 16 bytes of codes hold element i in the low nibble
// of byte i and element i+16 in the high nibble (q4_0's order; iq4_xs's units too).
const bool W_NIBBLES = WTYPE == WT_Q4_1 || WTYPE == WT_Q5_0 || WTYPE == WT_Q5_1 || WTYPE == WT_IQ4_NL || WTYPE == WT_IQ4_XS;

struct WUnit {
  vec4 sm;        // scale of elements 0..15, of 16..31; min of 0..15, of 16..31
  uint lo_at;     // byte offset of the codes' (low) bits: the unit's 16 bytes (W_NIBBLES) or 32, one per element
  uint lo_shift;  // one byte per element: the bit where its low bits start
  uint hi_at;     // q3_K, q5_K, q6_K: the unit's 32 bytes of high bits, one per element
  uint hi_shift;
  uint qh;        // q5_0, q5_1: the 32 fifth bits, bit i for element i
};

uint w_byte(uint byte_off) { return (w_words[byte_off >> 2] >> ((byte_off & 3u) * 8u)) & 0xFFu; }

// Eight bytes at any byte offset, from three word loads.
uvec2 w_u32x2(uint byte_off) {
  const uint i = byte_off >> 2, sh = (byte_off & 3u) * 8u;
  const uint a = w_words[i], b = w_words[i + 1u], c = w_words[i + 2u];
  if (sh == 0u) return uvec2(a, b);
  return uvec2((a >> sh) | (b << (32u - sh)), (b >> sh) | (c << (32u - sh)));
}

uint w_block_bytes() {
  if (WTYPE == WT_Q4_1) return 20u;
  if (WTYPE == WT_Q5_0) return 22u;
  if (WTYPE == WT_Q5_1) return 24u;
  if (WTYPE == WT_IQ4_NL) return 18u;
  if (WTYPE == WT_Q2_K) return 84u;
  if (WTYPE == WT_Q3_K) return 110u;
  if (WTYPE == WT_Q4_K) return 144u;
  if (WTYPE == WT_Q5_K) return 176u;
  if (WTYPE == WT_Q6_K) return 210u;
  return 136u;  // iq4_xs
}

// iq4_nl's and iq4_xs's 16 levels (core/dtype.h kIq4nlValues), as packed
// signed bytes picked by selects: an indexed constant array would become a
// memory load per element on CPU drivers.
float iq4_value(uint i) {
  const uint w = i < 8u ? (i < 4u ? 0xBFAD9881u : 0xF6EADDCFu) : (i < 12u ? 0x26190D01u : 0x71594535u);
  return float(bitfieldExtract(int(w), int(8u * (i & 3u)), 8));
}

// q4_K, q5_K: sub-block j's 6-bit scale (x) and min (y) from the 12 bytes at
// s (ggml's get_scale_min_k4), without a branch on j: the byte at s + j - 4
// for j < 4 is the block's dmin, read and not used.
uvec2 k4_scale_min(uint s, uint j) {
  const uint a = w_byte(s + j), b = w_byte(s + j + 4u), c = w_byte(s + j - 4u);
  const uvec2 low = uvec2(a & 63u, b & 63u);
  const uvec2 high = uvec2((b & 15u) | ((c >> 6) << 4), (b >> 4) | ((a >> 6) << 4));
  return j < 4u ? low : high;
}

// q3_K: scale i (of 16) from the 12 bytes at s, minus 32 (core/quant.cpp
// q3_K_scales): low 4 bits from the nibbles of bytes 0..7, high 2 from bytes 8..11.
int q3k_scale(uint s, uint i) {
  const uint b = i & 3u, g = i >> 2;
  const uint low = (w_byte(s + (g & 1u) * 4u + b) >> (4u * (g >> 1))) & 15u;
  const uint high = (w_byte(s + 8u + b) >> (2u * g)) & 3u;
  return int(low | (high << 4)) - 32;
}

// The unit holding element e of the row at byte row_off.
WUnit w_unit(uint row_off, uint e) {
  WUnit u;
  u.lo_shift = 0u;
  u.hi_at = 0u;
  u.hi_shift = 0u;
  u.qh = 0u;
  if (WTYPE == WT_Q4_1 || WTYPE == WT_Q5_0 || WTYPE == WT_Q5_1 || WTYPE == WT_IQ4_NL) {
    const uint blk = row_off + (e >> 5) * w_block_bytes();
    const float d = f16_at(blk);
    const float m = WTYPE == WT_Q4_1 || WTYPE == WT_Q5_1 ? f16_at(blk + 2u) : 0.0;
    u.sm = vec4(d, d, m, m);
    if (WTYPE == WT_Q4_1) {
      u.lo_at = blk + 4u;
    } else if (WTYPE == WT_Q5_0) {
      u.qh = w_u32(blk + 2u);
      u.lo_at = blk + 6u;
    } else if (WTYPE == WT_Q5_1) {
      u.qh = w_u32(blk + 4u);
      u.lo_at = blk + 8u;
    } else {
      u.lo_at = blk + 2u;
    }
    return u;
  }
  const uint blk = row_off + (e >> 8) * w_block_bytes(), j = (e >> 5) & 7u;
  if (WTYPE == WT_Q4_K || WTYPE == WT_Q5_K) {
    // Sub-block pair j/2 shares 32 bytes of codes: j even the low nibbles, odd the high.
    const uvec2 sc = k4_scale_min(blk + 4u, j);
    const float s = f16_at(blk) * float(sc.x), m = -(f16_at(blk + 2u) * float(sc.y));
    u.sm = vec4(s, s, m, m);
    u.lo_at = blk + (WTYPE == WT_Q4_K ? 16u : 48u) + 32u * (j >> 1);
    u.lo_shift = 4u * (j & 1u);
    u.hi_at = blk + 16u;  // q5_K's qh: bit j of byte i is element i's fifth bit
    u.hi_shift = j;
  } else if (WTYPE == WT_Q2_K) {
    // Each 32 bytes of qs hold four units, two bits apiece; scales[2j], [2j+1]: scale low nibble, min high.
    const uint sc0 = w_byte(blk + 2u * j), sc1 = w_byte(blk + 2u * j + 1u);
    const float d = f16_at(blk + 80u), dmin = f16_at(blk + 82u);
    u.sm = vec4(d * float(sc0 & 15u), d * float(sc1 & 15u), -(dmin * float(sc0 >> 4)), -(dmin * float(sc1 >> 4)));
    u.lo_at = blk + 16u + 32u * (j >> 2);
    u.lo_shift = 2u * (j & 3u);
  } else if (WTYPE == WT_Q3_K) {
    // As q2_K's codes, and bit j of hmask[i] for the third bit (clear: -4).
    const float d = f16_at(blk + 108u);
    u.sm = vec4(d * float(q3k_scale(blk + 96u, 2u * j)), d * float(q3k_scale(blk + 96u, 2u * j + 1u)), 0.0, 0.0);
    u.lo_at = blk + 32u + 32u * (j >> 2);
    u.lo_shift = 2u * (j & 3u);
    u.hi_at = blk;
    u.hi_shift = j;
  } else if (WTYPE == WT_Q6_K) {
    // Each 128-element half: 64 bytes of ql (unit g: bytes 32(g&1).., nibble g>>1), 32 of qh (bits 2g, 2g+1).
    const uint g = j & 3u;
    const uint sc = w_u16(blk + 192u + 2u * j);  // int8 scales[2j], [2j+1]
    const float d = f16_at(blk + 208u);
    u.sm = vec4(d * float(bitfieldExtract(int(sc), 0, 8)), d * float(bitfieldExtract(int(sc), 8, 8)), 0.0, 0.0);
    u.lo_at = blk + 64u * (j >> 2) + 32u * (g & 1u);
    u.lo_shift = 4u * (g >> 1);
    u.hi_at = blk + 128u + 32u * (j >> 2);
    u.hi_shift = 2u * g;
  } else {
    // iq4_xs: 6-bit scale j, low 4 bits in scales_l (nibble j&1 of byte j/2), high 2 in scales_h.
    const uint ls = ((w_byte(blk + 4u + (j >> 1)) >> (4u * (j & 1u))) & 15u) | (((w_u16(blk + 2u) >> (2u * j)) & 3u) << 4);
    const float s = f16_at(blk) * float(int(ls) - 32);
    u.sm = vec4(s, s, 0.0, 0.0);
    u.lo_at = blk + 8u + 16u * j;
  }
  return u;
}

// Codes of elements 8q .. 8q+7 of unit u (before scale and min).
void w_quarter(WUnit u, uint q, out float v[8]) {
  if (W_NIBBLES) {
    const uvec2 w = w_u32x2(u.lo_at + 8u * (q & 1u));
    const uint sh = 4u * (q >> 1);
    [[unroll]] for (uint c = 0u; c < 8u; ++c) {
      uint code = bitfieldExtract(c < 4u ? w.x : w.y, int(8u * (c & 3u) + sh), 4);
      if (WTYPE == WT_Q5_0 || WTYPE == WT_Q5_1) code |= bitfieldExtract(u.qh, int(8u * q + c), 1) << 4;
      if (WTYPE == WT_IQ4_NL || WTYPE == WT_IQ4_XS) v[c] = iq4_value(code);
      else v[c] = WTYPE == WT_Q5_0 ? float(int(code) - 16) : float(code);
    }
    return;
  }
  const uvec2 lo = w_u32x2(u.lo_at + 8u * q);
  const uvec2 hi = WTYPE == WT_Q3_K || WTYPE == WT_Q5_K || WTYPE == WT_Q6_K ? w_u32x2(u.hi_at + 8u * q) : uvec2(0u);
  const int lo_bits = WTYPE == WT_Q2_K || WTYPE == WT_Q3_K ? 2 : 4;
  [[unroll]] for (uint c = 0u; c < 8u; ++c) {
    const int at = int(8u * (c & 3u));
    uint code = bitfieldExtract(c < 4u ? lo.x : lo.y, at + int(u.lo_shift), lo_bits);
    const uint h = c < 4u ? hi.x : hi.y;
    if (WTYPE == WT_Q5_K) code |= bitfieldExtract(h, at + int(u.hi_shift), 1) << 4;
    if (WTYPE == WT_Q3_K) code |= bitfieldExtract(h, at + int(u.hi_shift), 1) << 2;
    if (WTYPE == WT_Q6_K) code |= bitfieldExtract(h, at + int(u.hi_shift), 2) << 4;
    v[c] = WTYPE == WT_Q3_K ? float(int(code) - 4) : WTYPE == WT_Q6_K ? float(int(code) - 32) : float(code);
  }
}

// Scale (x) and min (y) of the half that holds element e of unit u.
vec2 w_unit_half(WUnit u, uint e) { return ((e >> 4) & 1u) == 0u ? u.sm.xz : u.sm.yw; }
