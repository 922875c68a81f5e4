#include "core/compute_roofs.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessera {

namespace {

constexpr int kIters = 20000;         // iterations of a loop per item: ~40-150 us on one core
constexpr int kItemsPerThread = 8;    // items a run hands the pool per thread, so no thread idles long

// The loops' results, kept observable; atomic because every thread adds to it.
std::atomic<uint64_t> g_compute_sink{0};

using LoopFn = double (*)(int iters);  // runs the loop, returns the operations done

double fma_scalar(int iters) {
  float a[8];
  for (int j = 0; j < 8; ++j) a[j] = 1.0f + 0.001f * (float)j;
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 8; ++j) a[j] = a[j] * 0.999999f + 1e-7f;
  g_compute_sink.fetch_add((uint64_t)(a[0] + a[7]), std::memory_order_relaxed);
  return (double)iters * 8 * 2;
}

double int8_scalar(int iters) {
  int32_t a[8] = {};
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 8; ++j) a[j] += (int32_t)(uint8_t)(3 + j) * (int32_t)(int8_t)(i & 7) * 4;
  g_compute_sink.fetch_add((uint64_t)(a[0] + a[7]), std::memory_order_relaxed);
  return (double)iters * 8 * 2;
}

#if defined(__x86_64__)
// 12 independent chains cover the latency of two FMA ports.
__attribute__((target("avx512f"))) double fma_avx512(int iters) {
  __m512 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm512_set1_ps(1.0f + 0.001f * (float)j);
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) a[j] = _mm512_fmadd_ps(a[j], m, c);
  __m512 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, a[j]);
  g_compute_sink.fetch_add((uint64_t)_mm512_reduce_add_ps(s), std::memory_order_relaxed);
  return (double)iters * 12 * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_avx2(int iters) {
  __m256 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm256_set1_ps(1.0f + 0.001f * (float)j);
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) a[j] = _mm256_fmadd_ps(a[j], m, c);
  __m256 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, a[j]);
  alignas(32) float l[8];
  _mm256_store_ps(l, s);
  g_compute_sink.fetch_add((uint64_t)l[0], std::memory_order_relaxed);
  return (double)iters * 12 * 8 * 2;
}

// Pairs of bf16 multiplied and added into f32: 32 products and 32 adds an instruction.
__attribute__((target("avx512f,avx512bf16"))) double bf16_avx512(int iters) {
  __m512 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm512_set1_ps(1.0f + 0.001f * (float)j);
  const __m512bh u = (__m512bh)_mm512_set1_epi16(0x3f80), v = (__m512bh)_mm512_set1_epi16(0x3380);  // 1.0, ~6e-8
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) a[j] = _mm512_dpbf16_ps(a[j], u, v);
  __m512 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, a[j]);
  g_compute_sink.fetch_add((uint64_t)_mm512_reduce_add_ps(s), std::memory_order_relaxed);
  return (double)iters * 12 * 32 * 2;
}

// u8 x s8 dots of 4 into i32 (VNNI): 64 products and 64 adds an instruction.
__attribute__((target("avx512f,avx512vnni"))) double int8_vnni(int iters) {
  __m512i a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm512_set1_epi32(j);
  const __m512i u = _mm512_set1_epi8(3), v = _mm512_set1_epi8(-2);
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) a[j] = _mm512_dpbusd_epi32(a[j], u, v);
  __m512i s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_epi32(s, a[j]);
  g_compute_sink.fetch_add((uint64_t)_mm512_reduce_add_epi32(s), std::memory_order_relaxed);
  return (double)iters * 12 * 64 * 2;
}

// Without VNNI: u8 x s8 pairs to i16 (maddubs), widened and summed (madd, add),
// as the AVX2 kernels do.
__attribute__((target("avx2"))) double int8_avx2(int iters) {
  __m256i a[8];
  for (int j = 0; j < 8; ++j) a[j] = _mm256_set1_epi32(j);
  const __m256i u = _mm256_set1_epi8(3), v = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 8; ++j) a[j] = _mm256_add_epi32(a[j], _mm256_madd_epi16(_mm256_maddubs_epi16(u, v), one));
  __m256i s = a[0];
  for (int j = 1; j < 8; ++j) s = _mm256_add_epi32(s, a[j]);
  g_compute_sink.fetch_add((uint64_t)_mm256_extract_epi32(s, 0), std::memory_order_relaxed);
  return (double)iters * 8 * 32 * 2;
}
#endif

struct Loop {
  LoopFn fn = nullptr;  // null: the CPU has no instruction for the dtype
  const char* name = "none";
};

// The widest loop this CPU runs for the dtype.
Loop pick_loop(ComputeDtype d) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  switch (d) {
    case ComputeDtype::f32_fma:
      if (avx512) return {fma_avx512, "avx512 vfmadd231ps"};
      if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {fma_avx2, "avx2 vfmadd231ps"};
      return {fma_scalar, "scalar"};
    case ComputeDtype::bf16_dot:
      if (avx512 && __builtin_cpu_supports("avx512bf16")) return {bf16_avx512, "avx512 vdpbf16ps"};
      return {};
    case ComputeDtype::int8_dot:
      if (avx512 && __builtin_cpu_supports("avx512vnni")) return {int8_vnni, "avx512 vpdpbusd"};
      if (__builtin_cpu_supports("avx2")) return {int8_avx2, "avx2 vpmaddubsw"};
      return {int8_scalar, "scalar"};
  }
  return {};
#else
  switch (d) {
    case ComputeDtype::f32_fma: return {fma_scalar, "scalar"};
    case ComputeDtype::int8_dot: return {int8_scalar, "scalar"};
    case ComputeDtype::bf16_dot: return {};
  }
  return {};
#endif
}

}  // namespace

std::string_view name(ComputeDtype d) {
  switch (d) {
    case ComputeDtype::f32_fma: return "f32";
    case ComputeDtype::bf16_dot: return "bf16";
    case ComputeDtype::int8_dot: return "int8";
  }
  return "?";
}

ComputeRoof measure_compute_roof(ParallelFor& pf, ComputeDtype d, int runs) {
  ComputeRoof roof;
  roof.dtype = d;
  const Loop loop = pick_loop(d);
  roof.kernel = loop.name;
  if (loop.fn == nullptr) return roof;
  const int64_t items = (int64_t)pf.num_threads() * kItemsPerThread;
  auto run_once = [&] {
    std::atomic<double> ops{0};
    const auto t0 = std::chrono::steady_clock::now();
    pf.run(items, 1, [&](int64_t i0, int64_t i1) {
      double done = 0;
      for (int64_t i = i0; i < i1; ++i) done += loop.fn(kIters);
      ops.fetch_add(done, std::memory_order_relaxed);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return s > 0 ? ops.load() / s / 1e9 : 0.0;
  };
  run_once();  // warm-up: wakes the workers and lets the clock settle
  for (int r = 0; r < std::max(1, runs); ++r) roof.GFLOPs = std::max(roof.GFLOPs, run_once());
  return roof;
}

}  // namespace tessera
