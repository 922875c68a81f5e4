// Reading weight rows of any supported dtype out of 32-bit words, so that no
// shader needs 8- or 16-bit storage. The includer declares
//   const uint WTYPE  (a specialization constant, or fixed per module)
//   readonly buffer ... { uint w_words[]; };   and, at the same binding,
//   readonly buffer ... { uvec4 w_quads[]; };  (16-byte loads where aligned)
// before including. GGUF blocks are byte-packed and only 2-byte aligned
// (q8_0: 34 bytes, q4_0: 18 bytes, q3_K 110), hence the word-splicing.
//
// A quantized element is scale * code + min, with one scale and min per
// 16-element half of a 32-element unit (kernels/vulkan/weight_units.glsl).
// The readers return codes and the scales and mins separately, so a dot
// product multiplies by the scale once per half and adds min * Σx (Σx over
// the half, shared by every weight row) instead of dequantizing element by
// element: the same value, to rounding, for fewer operations per weight.
//
// The *_full readers take a `vec16` flag the caller computes from push
// constants alone (rows 16-byte aligned), so the branch on it is uniform: on
// CPU implementations (lavapipe) a branch the compiler cannot prove uniform
// runs both sides, masked.

uint w_u16(uint byte_off) {
  const uint w = w_words[byte_off >> 2];
  return (byte_off & 2u) != 0u ? (w >> 16) : (w & 0xFFFFu);
}

uint w_u32(uint byte_off) {
  const uint i = byte_off >> 2;
  const uint sh = (byte_off & 3u) * 8u;
  if (sh == 0u) return w_words[i];
  return (w_words[i] >> sh) | (w_words[i + 1u] << (32u - sh));
}

float f16_at(uint byte_off) { return unpackHalf2x16(w_u16(byte_off)).x; }

float bf16_at(uint byte_off) { return uintBitsToFloat(w_u16(byte_off) << 16); }

#include "weight_units.glsl"

// Whether WTYPE is a block type (rows are whole blocks: no partial unit at the end).
const bool W_QUANT = WTYPE >= WT_Q8_0;

// Element e of the row starting at byte row_off (any dtype, one element).
float w_load1(uint row_off, uint e) {
  if (WTYPE == WT_F32) return uintBitsToFloat(w_words[(row_off >> 2) + e]);
  if (WTYPE == WT_F16) return f16_at(row_off + 2u * e);
  if (WTYPE == WT_BF16) return bf16_at(row_off + 2u * e);
  if (W_UNITS) {
    const WUnit u = w_unit(row_off, e);
    float v[8];
    w_quarter(u, (e & 31u) >> 3, v);
    float code = v[0];
    [[unroll]] for (uint c = 1u; c < 8u; ++c) code = (e & 7u) == c ? v[c] : code;
    const vec2 sm = w_unit_half(u, e);
    return sm.x * code + sm.y;
  }
  const uint b = e >> 5, j = e & 31u;
  if (WTYPE == WT_Q8_0) {
    const uint blk = row_off + b * 34u;
    const uint q = (w_u32(blk + 2u + (j & ~3u)) >> ((j & 3u) * 8u)) & 0xFFu;
    return f16_at(blk) * float(int(q << 24) >> 24);
  }
  // q4_0: element j < 16 in the low nibble of qs[j], j >= 16 in the high nibble of qs[j - 16].
  const uint blk = row_off + b * 18u;
  const uint byte_i = j & 15u;
  const uint q = (w_u32(blk + 2u + (byte_i & ~3u)) >> ((byte_i & 3u) * 8u + (j >> 4) * 4u)) & 0xFu;
  return f16_at(blk) * (float(q) - 8.0);
}

// Four plain elements from 16 bytes.
void unpack_plain(uvec4 a, inout float v[8], uint at) {
  if (WTYPE == WT_F32) {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) v[at + j] = uintBitsToFloat(a[j]);
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      if (WTYPE == WT_F16) {
        const vec2 h = unpackHalf2x16(a[j]);
        v[at + 2u * j] = h.x;
        v[at + 2u * j + 1u] = h.y;
      } else {
        v[at + 2u * j] = uintBitsToFloat(a[j] << 16);
        v[at + 2u * j + 1u] = uintBitsToFloat(a[j] & 0xFFFF0000u);
      }
    }
  }
}

// Eight elements e0 .. e0+7 (e0 % 8 == 0, e0 + 8 <= the row's length).
// Quantized rows are whole 32-element units, so e0 selects a quarter unit,
// inside one half; v holds the codes and the half's scale (x) and min (y)
// are returned: the element is x * v + y. Plain types return (1, 0).
vec2 w_load8_full(uint row_off, uint e0, bool vec16, out float v[8]) {
  if (W_UNITS) {
    const WUnit u = w_unit(row_off, e0);
    w_quarter(u, (e0 & 31u) >> 3, v);
    return w_unit_half(u, e0);
  }
  if (WTYPE == WT_Q8_0) {
    const uint blk = row_off + (e0 >> 5) * 34u;
    const uint q0 = w_u32(blk + 2u + (e0 & 31u)), q1 = w_u32(blk + 6u + (e0 & 31u));
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      v[j] = float(bitfieldExtract(int(q0), int(8u * j), 8));
      v[j + 4u] = float(bitfieldExtract(int(q1), int(8u * j), 8));
    }
    return vec2(f16_at(blk), 0.0);
  }
  if (WTYPE == WT_Q4_0) {
    const uint sub = (e0 & 31u) >> 3;  // quarter: 0,1 low nibbles of qs[0..15]; 2,3 high nibbles
    const uint blk = row_off + (e0 >> 5) * 18u;
    const uint qa = blk + 2u + (sub & 1u) * 8u;
    const uint q0 = w_u32(qa), q1 = w_u32(qa + 4u);
    const int sh = int((sub >> 1) * 4u);
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      v[j] = float(bitfieldExtract(q0, int(8u * j) + sh, 4)) - 8.0;
      v[j + 4u] = float(bitfieldExtract(q1, int(8u * j) + sh, 4)) - 8.0;
    }
    return vec2(f16_at(blk), 0.0);
  }
  const uint elem_bytes = WTYPE == WT_F32 ? 4u : 2u;
  const uint at = row_off + e0 * elem_bytes;
  if (vec16) {
    if (WTYPE == WT_F32) {
      unpack_plain(w_quads[at >> 4], v, 0u);
      unpack_plain(w_quads[(at >> 4) + 1u], v, 4u);
    } else {
      unpack_plain(w_quads[at >> 4], v, 0u);
    }
  } else {
    [[unroll]] for (uint j = 0u; j < 8u; ++j) v[j] = w_load1(row_off, e0 + j);
  }
  return vec2(1.0, 0.0);
}

// The same, for the last, partial eight of a row of k elements: zero past k.
vec2 w_load8_tail(uint row_off, uint e0, uint k, out float v[8]) {
  if (W_QUANT) return w_load8_full(row_off, e0, false, v);  // quant rows are whole blocks
  [[unroll]] for (uint j = 0u; j < 8u; ++j) v[j] = e0 + j < k ? w_load1(row_off, e0 + j) : 0.0;
  return vec2(1.0, 0.0);
}

// Word i of a 12-word window, i = base + j for a per-invocation base in 0..3
// and a constant j: selects instead of indexing, which a CPU driver would
// turn into memory.
uint window_word(uvec4 q0, uvec4 q1, uvec4 q2, uint base, uint j) {
  const uint w[12] = uint[12](q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w, q2.x, q2.y, q2.z, q2.w);
  const uint a = w[min(j, 11u)], b = w[min(j + 1u, 11u)], c = w[min(j + 2u, 11u)], d = w[min(j + 3u, 11u)];
  return base == 0u ? a : base == 1u ? b : base == 2u ? c : d;
}

// Elements e0 .. e0+31 (e0 % 32 == 0, e0 + 32 <= the row's length): one
// whole quant unit, its codes in v. Returns the scale of elements 0..15, of
// 16..31, the min of 0..15, of 16..31 (plain types: 1, 1, 0, 0). q8_0 and
// q4_0 blocks are read as the three 16-byte words that cover them (blocks
// are only 2-byte aligned; q8_0 is 34 bytes, q4_0 18).
vec4 w_load32_full(uint row_off, uint e0, bool vec16, out float v[32]) {
  if (W_UNITS) {
    const WUnit u = w_unit(row_off, e0);
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      float part[8];
      w_quarter(u, q, part);
      [[unroll]] for (uint j = 0u; j < 8u; ++j) v[8u * q + j] = part[j];
    }
    return u.sm;
  }
  if (WTYPE == WT_Q8_0 || WTYPE == WT_Q4_0) {
    const uint blk = row_off + (e0 >> 5) * (WTYPE == WT_Q8_0 ? 34u : 18u);
    const uint qi = blk >> 4, shift = blk & 15u;
    const uvec4 q0 = w_quads[qi], q1 = w_quads[qi + 1u];
    const uvec4 q2 = WTYPE == WT_Q8_0 ? w_quads[qi + 2u] : uvec4(0u);
    const uint base = shift >> 2;
    const bool upper = (shift & 2u) != 0u;  // the scale is the upper half of its word; the quants then start word-aligned
    const uint first = window_word(q0, q1, q2, base, 0u);
    const float d = unpackHalf2x16(upper ? first >> 16 : first & 0xFFFFu).x;
    uint prev = first;
    if (WTYPE == WT_Q8_0) {
      [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        const uint next = window_word(q0, q1, q2, base, 1u + j);
        const uint q = upper ? next : (prev >> 16) | (next << 16);
        prev = next;
        [[unroll]] for (uint b = 0u; b < 4u; ++b) v[4u * j + b] = float(bitfieldExtract(int(q), int(8u * b), 8));
      }
    } else {
      [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        const uint next = window_word(q0, q1, q2, base, 1u + j);
        const uint q = upper ? next : (prev >> 16) | (next << 16);
        prev = next;
        [[unroll]] for (uint b = 0u; b < 4u; ++b) {
          v[4u * j + b] = float(bitfieldExtract(q, int(8u * b), 4)) - 8.0;
          v[16u + 4u * j + b] = float(bitfieldExtract(q, int(8u * b) + 4, 4)) - 8.0;
        }
      }
    }
    return vec4(d, d, 0.0, 0.0);
  }
  [[unroll]] for (uint q = 0u; q < 4u; ++q) {
    float part[8];
    w_load8_full(row_off, e0 + 8u * q, vec16, part);
    [[unroll]] for (uint j = 0u; j < 8u; ++j) v[8u * q + j] = part[j];
  }
  return vec4(1.0, 1.0, 0.0, 0.0);
}

// The same, for the last, partial 32 of a row of k elements: zero past k.
vec4 w_load32_tail(uint row_off, uint e0, uint k, out float v[32]) {
  if (W_QUANT) return w_load32_full(row_off, e0, false, v);  // quant rows are whole blocks
  [[unroll]] for (uint j = 0u; j < 32u; ++j) v[j] = e0 + j < k ? w_load1(row_off, e0 + j) : 0.0;
  return vec4(1.0, 1.0, 0.0, 0.0);
}

// Whether rows of a plain-typed weight start 16-byte aligned (uniform: push constants only).
bool w_rows_vec16(uint base_off, uint row_bytes) { return ((base_off | row_bytes) & 15u) == 0u; }
