#pragma once
// Scalar quantize/dequantize of whole rows in GGUF's block formats. These are
// the definitions: SIMD kernels are checked against them, and the GGUF writer
// uses them, so a file we write matches ggml's own quantizer.
#include <cstdint>
#include <span>

#include "core/dtype.h"

namespace tessera {

// n must be a multiple of the block size.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n);

// Any supported dtype (plain or quantized) to f32 and back; i8/i32 convert by value.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// q4_K has no quantizer here (we read it, we do not write it); returns false then.
bool quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace tessera
