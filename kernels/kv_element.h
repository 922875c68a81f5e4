#pragma once
// One element of a KV pool (kernel_args.h: f32, f16 or bf16), read as f32
// and stored rounded to nearest even (core/half.h, bit-exact with F16C). The
// plain path every kernel's vector code must agree with.
#include <cstdint>

#include "core/dtype.h"
#include "core/half.h"

namespace tessera::kernels {

inline float load_kv(const void* pool, DType t, int64_t i) {
  switch (t) {
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(pool)[i]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(pool)[i]);
    default: return static_cast<const float*>(pool)[i];
  }
}

inline void store_kv(void* pool, DType t, int64_t i, float x) {
  switch (t) {
    case DType::f16: static_cast<uint16_t*>(pool)[i] = f32_to_f16(x); break;
    case DType::bf16: static_cast<uint16_t*>(pool)[i] = f32_to_bf16(x); break;
    default: static_cast<float*>(pool)[i] = x; break;
  }
}

// x rounded to the pool's type and back: what attention reads of an appended x.
inline float round_to_kv(DType t, float x) {
  switch (t) {
    case DType::f16: return f16_to_f32(f32_to_f16(x));
    case DType::bf16: return bf16_to_f32(f32_to_bf16(x));
    default: return x;
  }
}

}  // namespace tessera::kernels
