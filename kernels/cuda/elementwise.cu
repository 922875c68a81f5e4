// The elementwise ops: one thread per element in grid-stride loops (these
// ops are a read and a write of each element; a block of 256 threads and
// coalesced f32 accesses reach the copy rate without more). The math is
// f32 with the runtime's accurate expf/tanhf where the reference
// (kernels/reference/elementwise.cpp) uses f64: the results differ from it by
// a few f32 ulps, inside the conformance suite's bound for f32.
#include "kernels/cuda/gpu_device.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu::kernels {

namespace {

constexpr int kThreads = 256;

__device__ inline float silu_of(float x) { return x / (1.0f + expf(-x)); }

// GELU's tanh approximation (ggml's gelu).
__device__ inline float gelu_of(float x) {
  const float sqrt_2_over_pi = 0.79788456080286535588f;
  return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * (x + 0.044715f * x * x * x)));
}

// ggml's CPU GELU (gelu_mul's): the input rounded to f16, the f32 formula of
// that, rounded to f16; saturated outside (-10, 10).
__device__ inline float gelu_f16_of(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  const float v = __half2float(__float2half(x));
  const float g = 0.5f * v * (1.0f + tanhf(0.79788456080286535588f * v * (1.0f + 0.044715f * v * v)));
  return __half2float(__float2half(g));
}

enum class Unary : int { silu, gelu, scale, softcap };
enum class Binary : int { add, mul, silu_mul, gelu_mul };

__global__ void unary_kernel(const float* x, float* out, int64_t n, Unary op, float s) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    switch (op) {
      case Unary::silu: out[i] = silu_of(v); break;
      case Unary::gelu: out[i] = gelu_of(v); break;
      case Unary::scale: out[i] = v * s; break;
      case Unary::softcap: out[i] = s * tanhf(v / s); break;
    }
  }
}

__global__ void binary_kernel(const float* a, const float* b, float* out, int64_t n, Binary op) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float x = a[i], y = b[i];
    switch (op) {
      case Binary::add: out[i] = x + y; break;
      case Binary::mul: out[i] = x * y; break;
      // llama2.c's formula, as the reference: g * (1 / (1 + exp(-g))) * u.
      case Binary::silu_mul: out[i] = x * (1.0f / (1.0f + expf(-x))) * y; break;
      case Binary::gelu_mul: out[i] = gelu_f16_of(x) * y; break;
    }
  }
}

__global__ void bias_add_kernel(const float* x, const float* bias, float* out, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = x[i] + bias[i % cols];
}

// An ElementwiseProgram (core/ops.h) per element: registers 0..n_inputs-1 the
// inputs (a row input indexed by column), then one register per instruction.
__global__ void program_kernel(ElementwiseProgram p, EwInputs in, float* out, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float r[kEwMaxInputs + kEwMaxInstrs];
    for (int j = 0; j < p.n_inputs; ++j) r[j] = in.p[j] ? in.p[j][in.row[j] ? i % cols : i] : 0.0f;
    for (int j = 0; j < p.n_instrs; ++j) {
      const float a = r[p.instrs[j].a], b = r[p.instrs[j].b];
      float v = 0.0f;
      switch (p.instrs[j].op) {
        case EwOp::add:
        case EwOp::bias_add: v = a + b; break;
        case EwOp::mul: v = a * b; break;
        case EwOp::silu: v = silu_of(a); break;
        case EwOp::gelu: v = gelu_of(a); break;
        case EwOp::gelu_f16: v = gelu_f16_of(a); break;
      }
      r[p.n_inputs + j] = v;
    }
    out[i] = r[p.n_inputs + p.n_instrs - 1];  // output_register(), a host function
  }
}

gpuError_t unary(const float* x, float* out, int64_t n, Unary op, float s, gpuStream_t st) {
  if (n <= 0) return gpuSuccess;
  unary_kernel<<<grid_for(n, kThreads), kThreads, 0, st>>>(x, out, n, op, s);
  return gpuGetLastError();
}

gpuError_t binary(const float* a, const float* b, float* out, int64_t n, Binary op, gpuStream_t st) {
  if (n <= 0) return gpuSuccess;
  binary_kernel<<<grid_for(n, kThreads), kThreads, 0, st>>>(a, b, out, n, op);
  return gpuGetLastError();
}

}  // namespace

gpuError_t add(const AddArgs& a, gpuStream_t s) { return binary(a.a, a.b, a.out, a.n, Binary::add, s); }
gpuError_t mul(const MulArgs& a, gpuStream_t s) { return binary(a.a, a.b, a.out, a.n, Binary::mul, s); }
gpuError_t silu_mul(const SiluMulArgs& a, gpuStream_t s) { return binary(a.gate, a.up, a.out, a.n, Binary::silu_mul, s); }
gpuError_t gelu_mul(const GeluMulArgs& a, gpuStream_t s) { return binary(a.gate, a.up, a.out, a.n, Binary::gelu_mul, s); }
gpuError_t silu(const UnaryArgs& a, gpuStream_t s) { return unary(a.x, a.out, a.n, Unary::silu, 0.0f, s); }
gpuError_t gelu(const UnaryArgs& a, gpuStream_t s) { return unary(a.x, a.out, a.n, Unary::gelu, 0.0f, s); }
gpuError_t scale(const ScalarOpArgs& a, gpuStream_t s) { return unary(a.x, a.out, a.n, Unary::scale, a.s, s); }
gpuError_t softcap(const ScalarOpArgs& a, gpuStream_t s) { return unary(a.x, a.out, a.n, Unary::softcap, a.s, s); }

gpuError_t bias_add(const BiasAddArgs& a, gpuStream_t s) {
  const int64_t n = a.rows * a.cols;
  if (n <= 0) return gpuSuccess;
  bias_add_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(a.x, a.bias, a.out, a.rows, a.cols);
  return gpuGetLastError();
}

gpuError_t elementwise(const ElementwiseArgs& a, gpuStream_t s) {
  const int64_t n = a.rows * a.cols;
  if (n <= 0) return gpuSuccess;
  EwInputs in{};
  for (int j = 0; j < a.program->n_inputs && j < kEwMaxInputs; ++j) {
    in.p[j] = a.inputs[j];
    in.row[j] = a.program->is_row_input(j);
  }
  program_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(*a.program, in, a.out, a.rows, a.cols);
  return gpuGetLastError();
}

}  // namespace tessera::gpu::kernels
