#pragma once
// Reading GGUF weight bytes into registers. Block types are byte-packed and
// every field is only 2-byte aligned in general (q8_0 blocks are 34 bytes,
// q4_0 18, q3_K 110, q6_K 210), while q4_K / q5_K blocks (144, 176 bytes)
// keep their codes 16-byte aligned whenever the row is. So every read takes
// the widest load its address allows, checked per address at run time: a
// 16-byte load, else 4-byte loads, else 4-byte loads of the aligned words
// inside the range spliced with 2-byte loads at its two ends, so that no
// byte outside [p, p + bytes) is ever touched (the last block of a weight
// may end 2 bytes before a 4-byte boundary).
#include <cstdint>

#include "kernels/cuda/gpu_device.h"

namespace tessera::gpu::kernels {

__device__ __forceinline__ uint32_t load_u16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }

// kBytes (a multiple of 4) bytes at p (2-byte aligned) as little-endian
// words: byte i of the range is byte i % 4 of w[i / 4].
template <int kBytes>
__device__ __forceinline__ void load_words(const uint8_t* p, uint32_t (&w)[kBytes / 4]) {
  static_assert(kBytes % 4 == 0 && kBytes > 0);
  constexpr int kWords = kBytes / 4;
  const auto at = reinterpret_cast<uintptr_t>(p);
  if constexpr (kBytes % 16 == 0) {
    if ((at & 15u) == 0) {
      const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
      for (int i = 0; i < kWords / 4; ++i) {
        const uint4 v = q[i];
        w[4 * i + 0] = v.x;
        w[4 * i + 1] = v.y;
        w[4 * i + 2] = v.z;
        w[4 * i + 3] = v.w;
      }
      return;
    }
  }
  if ((at & 3u) == 0) {
    const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = q[i];
    return;
  }
  // p = 2 (mod 4): the range is 2 bytes, kWords - 1 aligned words, 2 bytes.
  // a[i] is the aligned word holding bytes 4i - 2 .. 4i + 1 of the range,
  // with the two bytes outside it (before the start, past the end) zero.
  const uint32_t* q = reinterpret_cast<const uint32_t*>(p + 2);
  uint32_t a[kWords + 1];
  a[0] = load_u16(p) << 16;
#pragma unroll
  for (int i = 1; i < kWords; ++i) a[i] = q[i - 1];
  a[kWords] = load_u16(p + kBytes - 2);
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = (a[i] >> 16) | (a[i + 1] << 16);
}

// Byte i of a word array, i a compile-time constant after unrolling.
template <int kWords>
__device__ __forceinline__ uint32_t byte_of(const uint32_t (&w)[kWords], int i) {
  return (w[i >> 2] >> (8 * (i & 3))) & 0xffu;
}

__device__ __forceinline__ float f16_at(const uint8_t* p) { return f16_bits_to_f32((uint16_t)load_u16(p)); }

}  // namespace tessera::gpu::kernels
