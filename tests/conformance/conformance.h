#pragma once
// Shared helpers of the conformance suite: the ISA loop, error norms,
// aligned scratch, random weights in every format, and a thread pool.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/reference.h"
#include "support/random.h"

namespace tessera::testing {

namespace cpu = kernels::cpu;
namespace ref = kernels::reference;
using kernels::AddArgs, kernels::ArgmaxArgs, kernels::AttentionArgs, kernels::EmbeddingArgs, kernels::GatherRowsArgs,
    kernels::KvAppendArgs, kernels::MatmulArgs, kernels::RmsNormArgs, kernels::RopeArgs, kernels::SiluMulArgs,
    kernels::SoftmaxArgs;

// Three workers on any machine, so chunking and the caller-works path both run.
inline ParallelFor& pool() {
  static ThreadPool p(3);
  return p;
}

// Runs body(isa) with each runnable ISA forced in turn, then restores the
// one that was active, even when a REQUIRE throws.
template <typename Body>
void for_each_isa(Body body) {
  struct Restore {
    cpu::Isa saved = cpu::active_isa();
    ~Restore() { cpu::force_isa(saved); }
  } restore;
  for (cpu::Isa isa : cpu::runnable_isas()) {
    cpu::force_isa(isa);
    INFO("isa = " << std::string(cpu::name(isa)));
    body(isa);
  }
}

// ||y - ref|| / ||ref|| (or ||y - ref|| when ref is all zeros).
inline double rel_error(const float* y, const float* r, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = (double)y[i] - (double)r[i];
    num += d * d;
    den += (double)r[i] * r[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}
inline double rel_error(const std::vector<float>& y, const std::vector<float>& r) {
  REQUIRE(y.size() == r.size());
  return rel_error(y.data(), r.data(), y.size());
}

// (A compare, not std::fmax: GCC 12's aarch64 vectorizer stops with an
// internal compiler error on an fmax reduction over doubles. A NaN
// difference is passed over either way, as fmax does.)
inline double max_abs_diff(const std::vector<float>& y, const std::vector<float>& r) {
  double m = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double d = std::fabs((double)y[i] - (double)r[i]);
    if (d > m) m = d;
  }
  return m;
}

// 64-byte aligned scratch, as the kernels' workspace contract asks.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes) : size((bytes + 63) / 64 * 64 + 64) {
    ptr.reset(static_cast<std::byte*>(std::aligned_alloc(64, size)));
    std::memset(ptr.get(), 0xcd, size);  // garbage, so nothing relies on zeroed scratch
  }
  void* data() { return ptr.get(); }
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  size_t size;
  std::unique_ptr<std::byte, Free> ptr;
};

// n rows of k weights in `t`. Quantized formats get random blocks straight
// from the byte space (every code, q8_0's -128 included, random signed f16
// scales), so the kernels see what no quantizer of ours would produce.
inline std::vector<std::byte> random_weights(DType t, int64_t n, int64_t k, Rng& rng) {
  const int64_t elems = n * k;
  std::vector<std::byte> w(bytes_for(t, elems));
  auto f16_scale = [&](float lo, float hi) {
    const float v = rng.uniform(lo, hi);
    return f32_to_f16(rng.integer(0, 1) ? v : -v);
  };
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: {
      const std::vector<float> f = rng.floats((size_t)elems);
      quantize_row(t, f.data(), w.data(), elems);
      break;
    }
    case DType::q8_0: {
      auto* b = reinterpret_cast<BlockQ8_0*>(w.data());
      for (int64_t i = 0; i < elems / kQK8_0; ++i) {
        b[i].d = f16_scale(0.002f, 0.01f);
        for (auto& q : b[i].qs) q = (int8_t)rng.integer(-128, 127);
      }
      break;
    }
    case DType::q4_0: {
      auto* b = reinterpret_cast<BlockQ4_0*>(w.data());
      for (int64_t i = 0; i < elems / kQK4_0; ++i) {
        b[i].d = f16_scale(0.05f, 0.15f);
        for (auto& q : b[i].qs) q = (uint8_t)rng.integer(0, 255);
      }
      break;
    }
    case DType::q4_K: {
      auto* b = reinterpret_cast<BlockQ4_K*>(w.data());
      for (int64_t i = 0; i < elems / kQK_K; ++i) {
        b[i].d = f32_to_f16(rng.uniform(0.0005f, 0.002f));
        b[i].dmin = f32_to_f16(rng.uniform(0.0005f, 0.002f));
        for (auto& s : b[i].scales) s = (uint8_t)rng.integer(0, 255);
        for (auto& q : b[i].qs) q = (uint8_t)rng.integer(0, 255);
      }
      break;
    }
    default: {
      // The other block types: random codes and scale bytes, then every f16
      // scale field (at the offsets below) set to a small finite value, so
      // random bits make no inf or NaN and the products stay O(1).
      REQUIRE(traits(t).quantized);
      for (auto& byte : w) byte = (std::byte)rng.integer(0, 255);
      struct ScaleField { size_t offset; float lo, hi; };
      std::vector<ScaleField> fields;
      switch (t) {
        case DType::q4_1: case DType::q5_1: fields = {{0, 0.02f, 0.08f}, {2, -0.3f, 0.3f}}; break;
        case DType::q5_0: fields = {{0, 0.02f, 0.08f}}; break;
        case DType::iq4_nl: fields = {{0, 0.002f, 0.006f}}; break;
        case DType::q2_K: fields = {{80, 0.005f, 0.02f}, {82, 0.005f, 0.02f}}; break;
        case DType::q3_K: fields = {{108, 0.002f, 0.006f}}; break;
        case DType::q5_K: fields = {{0, 0.0005f, 0.002f}, {2, 0.0005f, 0.002f}}; break;
        case DType::q6_K: fields = {{208, 0.0002f, 0.0006f}}; break;
        case DType::iq4_xs: fields = {{0, 0.0001f, 0.0003f}}; break;
        default: FAIL("no random weights for " << std::string(name(t)));
      }
      const size_t bb = traits(t).block_bytes;
      for (int64_t i = 0; i < elems / (int64_t)traits(t).block_elems; ++i)
        for (const ScaleField& f : fields) {
          const uint16_t h = f32_to_f16(rng.uniform(f.lo, f.hi));
          std::memcpy(w.data() + (size_t)i * bb + f.offset, &h, 2);
        }
      break;
    }
  }
  return w;
}

// The CPU matmuls that quantize x to 8 bits before integer dots: the
// 32-element block types in blocks of 32 (q8_0's activations, with sums for
// q4_1/q5_1 as ggml's q8_1), the K-quants and iq4_xs in blocks of 256
// (q8_K). 0 for the others (f32, f16, bf16), which keep x in f32.
inline int64_t x_quant_block(DType t) {
  switch (t) {
    case DType::q8_0:
    case DType::q4_0:
    case DType::q4_1:
    case DType::q5_0:
    case DType::q5_1:
    case DType::iq4_nl: return kQK8_0;
    case DType::q2_K:
    case DType::q3_K:
    case DType::q4_K:
    case DType::q5_K:
    case DType::q6_K:
    case DType::iq4_xs: return kQK_K;
    default: return 0;
  }
}
inline bool quantizes_x(DType t) { return x_quant_block(t) != 0; }
// Weight formats with a per-block offset (y = d * q - min): random blocks
// give every output of a row a large common term times the sum of that x row's
// block (see q8_error_bound).
inline bool has_block_mins(DType t) {
  return t == DType::q4_1 || t == DType::q5_1 || t == DType::q2_K || t == DType::q4_K || t == DType::q5_K;
}

// ggml's activation grid for weight type t: the q8 block its CPU vec_dot
// rounds x to before integer dots. q8_0, q4_0, q5_0, iq4_nl take q8_0 and
// q4_1, q5_1 q8_1 (32 elements, d = max|x| / 127 stored as f16); the
// K-quants and iq4_xs take q8_K (256 elements, d in f32). 0 for plain types.
// The Vulkan matmuls round x to it for every block type; the CPU's do for
// those of x_quant_block, with d kept in f32.
struct Q8Grid {
  int64_t block = 0;
  bool f16_scale = false;
};
inline Q8Grid ggml_q8_grid(DType t) {
  if (!traits(t).quantized) return {};
  return traits(t).block_elems == kQK_K ? Q8Grid{kQK_K, false} : Q8Grid{kQK8_0, true};
}

// x rounded to a q8 grid, as the test's own oracle: per block, amax = max|x|,
// q = round-half-even(x * 127/amax) (ggml's x86 quantizers), and q * d with
// d = amax / 127 rounded to f16 (q8_0, q8_1) or d = 1 / (127/amax) in f32
// (q8_K: quantize_row_q8_K_ref's 1/iscale, its sign cancelling in q * d).
inline std::vector<float> round_to_q8_grid(const std::vector<float>& x, Q8Grid g) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size() / (size_t)g.block; ++b) {
    const float* xb = x.data() + b * (size_t)g.block;
    float amax = 0.0f;
    for (int64_t j = 0; j < g.block; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float iscale = amax > 0.0f ? 127.0f / amax : 0.0f;
    const float d = g.f16_scale ? f16_to_f32(f32_to_f16(amax / 127.0f)) : (amax > 0.0f ? 1.0f / iscale : 0.0f);
    for (int64_t j = 0; j < g.block; ++j) {
      const float q = std::fmin(std::fmax(std::nearbyint(xb[j] * iscale), -127.0f), 127.0f);
      out[b * (size_t)g.block + (size_t)j] = q * d;
    }
  }
  return out;
}

// x moved off the ties of rounding to `g`: per block, scaled by 1.001 until
// d = max|x| / 127 is not within 64 f32 ulps of a tie of its f16 rounding
// (f16 grids), and each element whose x * 127/amax lies within 0.01 of a
// half-integer moved 0.02 steps of d towards zero. A device whose division
// differs from IEEE by an ulp or two (Vulkan allows 2.5) then rounds every
// q as the oracle round_to_q8_grid does.
inline void keep_off_q8_ties(std::vector<float>& x, Q8Grid g) {
  for (size_t b = 0; b < x.size() / (size_t)g.block; ++b) {
    float* xb = x.data() + b * (size_t)g.block;
    auto amax_of = [&] {
      float a = 0.0f;
      for (int64_t j = 0; j < g.block; ++j) a = std::fmax(a, std::fabs(xb[j]));
      return a;
    };
    for (int tries = 0; g.f16_scale && tries < 100; ++tries) {
      const float d = amax_of() / 127.0f;
      // d in units of its f16 step (2^-24 below f16's smallest normal, 2^-14)
      const float step = d < 6.103515625e-05f ? 5.9604644775390625e-08f : std::ldexp(1.0f, std::ilogb(d) - 10);
      const float units = d / step;  // exact: a power-of-two scaling
      if (std::fabs(units - std::floor(units) - 0.5f) > 64.0f * std::ldexp(1.0f, -23) * units) break;
      for (int64_t j = 0; j < g.block; ++j) xb[j] *= 1.001f;
    }
    const float amax = amax_of();
    if (amax == 0.0f) continue;
    const float iscale = 127.0f / amax, d = amax / 127.0f;
    for (int64_t j = 0; j < g.block; ++j) {
      const float v = std::fabs(xb[j]) * iscale;
      if (std::fabs(v - std::floor(v) - 0.5f) < 0.01f) xb[j] -= std::copysign(0.02f * d, xb[j]);
    }
  }
}

// Worst case of 8-bit activation rounding for each output: |x - x'| <= d/2
// with d = max|x in block| / 127 (of `xb` elements; x_quant_block(t) unless
// given), plus, where d is stored as f16 (ggml's q8_0 and q8_1), 127 times
// d's f16 rounding error, so |y - ref| <= sum_j |w_j| * bound_j, plus f32
// accumulation slack. Per-output, so it holds where a relative norm does
// not: with positive per-block mins (q4_K, q5_K) and one x row, every output
// is mostly the same multiple of sum(x), and ||ref|| can be near zero by
// chance while the rounding error is not. A device that quantizes x in
// smaller blocks than x_quant_block(t) (or not at all) meets it too.
inline std::vector<float> q8_error_bound(DType t, const std::vector<float>& x, const std::vector<std::byte>& w, int64_t m,
                                         int64_t n, int64_t k, Q8Grid grid = {}) {
  const int64_t xb = grid.block ? grid.block : x_quant_block(t);
  std::vector<float> half_d((size_t)(m * k)), wrow((size_t)k), out((size_t)(m * n));
  for (int64_t b = 0; b < m * k / xb; ++b) {
    float amax = 0.0f;
    for (int64_t j = 0; j < xb; ++j) amax = std::fmax(amax, std::fabs(x[(size_t)(b * xb + j)]));
    const float d = amax / 127.0f;
    const float f16_error = grid.f16_scale ? 127.0f * std::fabs(d - f16_to_f32(f32_to_f16(d))) : 0.0f;
    for (int64_t j = 0; j < xb; ++j) half_d[(size_t)(b * xb + j)] = d / 2.0f + f16_error;
  }
  for (int64_t r = 0; r < n; ++r) {
    dequantize_row(t, w.data() + r * bytes_for(t, k), wrow.data(), k);
    for (int64_t i = 0; i < m; ++i) {
      double e = 0.0, mag = 0.0;
      for (int64_t j = 0; j < k; ++j) {
        e += std::fabs(wrow[(size_t)j]) * half_d[(size_t)(i * k + j)];
        mag += std::fabs(wrow[(size_t)j] * x[(size_t)(i * k + j)]);
      }
      out[(size_t)(i * n + r)] = (float)(e * 1.001 + 1e-5 * mag + 1e-30);
    }
  }
  return out;
}

// Whether the CPU's matmul for t at m x rows (the active ISA, default
// kernels) rounds x to bf16: the bf16 dot panels (kernels/cpu/
// float_panel_gemm__avx512vnni.cpp), which multiply in bf16 as ggml and
// oneDNN's bf16 matmuls do. backend: the device label's backend ("cpu", ...).
inline bool rounds_x_to_bf16(const std::string& backend, DType t, int64_t m) {
  return backend == "cpu" && cpu::matmul_compute_dtype(t, m) == ComputeDtype::bf16_dot;
}

// sum_j |w_j x_j| for each output (m rows of x against n rows of w): the
// scale every dot's rounding error is measured against, since a dot whose
// terms cancel has a result far smaller than its error. t: f32, f16 or bf16.
inline std::vector<double> dot_magnitudes(DType t, const std::vector<float>& x, const std::vector<std::byte>& w,
                                          int64_t m, int64_t n, int64_t k) {
  std::vector<float> wrow((size_t)k);
  std::vector<double> out((size_t)(m * n));
  for (int64_t r = 0; r < n; ++r) {
    dequantize_row(t, w.data() + r * bytes_for(t, k), wrow.data(), k);
    for (int64_t i = 0; i < m; ++i) {
      double mag = 0.0;
      for (int64_t j = 0; j < k; ++j) mag += std::fabs((double)wrow[(size_t)j] * x[(size_t)(i * k + j)]);
      out[(size_t)(i * n + r)] = mag;
    }
  }
  return out;
}

// Worst case of rounding x to bf16 for each output: nearest even keeps 8
// significant bits, |x - x'| <= 2^-8 |x| (the bf16 dot flushes denormals,
// below 2^-126, too), so |y - ref| <= 2^-8 sum_j |w_j x_j|, plus f32
// accumulation slack.
inline std::vector<float> bf16_x_error_bound(DType t, const std::vector<float>& x, const std::vector<std::byte>& w,
                                             int64_t m, int64_t n, int64_t k) {
  std::vector<float> out;
  for (double mag : dot_magnitudes(t, x, w, m, n, k))
    out.push_back((float)(mag * (std::ldexp(1.0, -8) * 1.001 + 1e-5) + k * 1e-37 + 1e-30));
  return out;
}

// Worst case of summing k f32 products in any order, fused or not: each
// add and multiply rounds by at most 2^-24 relative, so |y - ref| <=
// (k + 1) 2^-24 sum_j |w_j x_j| (Higham's gamma_k bound, first order),
// doubled for the reference's own rounding.
inline std::vector<float> f32_dot_error_bound(DType t, const std::vector<float>& x, const std::vector<std::byte>& w,
                                              int64_t m, int64_t n, int64_t k) {
  std::vector<float> out;
  for (double mag : dot_magnitudes(t, x, w, m, n, k))
    out.push_back((float)(mag * 2.0 * (double)(k + 1) * std::ldexp(1.0, -24) + k * 1e-37 + 1e-30));
  return out;
}

// How many outputs of y lie further from ref than worst allows.
inline size_t beyond_bound(const std::vector<float>& y, const std::vector<float>& ref, const std::vector<float>& worst) {
  size_t over = 0;
  for (size_t i = 0; i < worst.size(); ++i) over += !(std::fabs(y[i] - ref[i]) <= worst[i]);
  return over;
}

struct MatmulShape {
  int64_t m, n, k;
};

// A plain-weight (f32, f16, bf16) matmul's output y on device `label`
// against the reference's: every output within f32_dot_error_bound and,
// with 32 outputs or more, the whole within 1e-5 relative, or, where the
// device's kernel rounds x to bf16, every output within bf16_x_error_bound and, with
// 32 outputs or more, the whole within 4e-3 relative (~2^-9.5 rms for
// uniform x).
inline void check_plain_output(const std::string& label, DType t, const std::vector<float>& x,
                               const std::vector<std::byte>& w, MatmulShape s, const std::vector<float>& y,
                               const std::vector<float>& expect) {
  if (!rounds_x_to_bf16(label.substr(0, label.find(':')), t, s.m)) {
    // A few outputs may each be a dot that cancels to almost nothing (m=n=1,
    // k=2 does): there only the per-output bound holds.
    if (y.size() >= 32) CHECK(rel_error(y, expect) <= 1e-5);
    CHECK(beyond_bound(y, expect, f32_dot_error_bound(t, x, w, s.m, s.n, s.k)) == 0);
    return;
  }
  if (y.size() >= 32) CHECK(rel_error(y, expect) <= 4e-3);  // a handful of dots can cancel to a tiny ||ref||
  CHECK(beyond_bound(y, expect, bf16_x_error_bound(t, x, w, s.m, s.n, s.k)) == 0);
}

}  // namespace tessera::testing
