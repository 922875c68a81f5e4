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
// core/quant_k.cpp: llama.cpp's reference quantizers (no importance matrix), operation for operation.
void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n);
void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n);
void quantize_row_q4_K(const float* x, BlockQ4_K* y, int64_t n);
void quantize_row_q5_K(const float* x, BlockQ5_K* y, int64_t n);
void quantize_row_q6_K(const float* x, BlockQ6_K* y, int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n);
void dequantize_row_iq4_nl(const BlockIq4_NL* x, float* y, int64_t n);
void dequantize_row_q2_K(const BlockQ2_K* x, float* y, int64_t n);
void dequantize_row_q3_K(const BlockQ3_K* x, float* y, int64_t n);
void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n);
void dequantize_row_iq4_xs(const BlockIq4_XS* x, float* y, int64_t n);
// q4_K's and q5_K's 6-bit scale and min of sub-block j (of 8) from their 12 packed bytes.
void q4_K_scale_min(int j, const uint8_t* packed, uint8_t* scale, uint8_t* min);
// q3_K's 16 sub-block scales from their 12 packed bytes, as signed values (-32 .. 31).
void q3_K_scales(const uint8_t* packed, int8_t out[16]);

// Any supported dtype (plain or quantized) to f32 and back; i8/i32 convert by value.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// q2_K, q3_K and the i-quants have no quantizer here (read, not written); returns false for them.
bool quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace tessera
