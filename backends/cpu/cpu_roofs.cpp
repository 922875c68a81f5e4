#include "backends/cpu/cpu_roofs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera::cpu {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int kRuns = 3;                         // best of: a noisy neighbour spoils a run, not the figure
constexpr uint64_t kMinReadBytes = 16ull << 20;  // read buffer: 1.25x the LLC, within these
constexpr uint64_t kMaxReadBytes = 40ull << 20;
constexpr uint64_t kHugePage = 2ull << 20;       // huge pages fault the buffer in ~500x fewer times
constexpr int kFmaIters = 20000;                 // ~0.2-1 ms a run on one core

// Keeps the loops' results observable.
// Results the timed loops feed so the compiler keeps them; atomic because
// the read-bandwidth threads all add to it.
std::atomic<uint64_t> g_roof_sink{0};

// 8 independent 64-bit lanes so that only memory sets the pace.
uint64_t read_scalar(const uint64_t* p, size_t words) {
  uint64_t a[8] = {};
  for (size_t i = 0; i + 8 <= words; i += 8)
    for (int j = 0; j < 8; ++j) a[j] ^= p[i + j];
  return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t read_avx2(const uint64_t* p, size_t words) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 16 <= words; i += 16) {
    const __m256i* q = reinterpret_cast<const __m256i*>(p + i);
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(q + 0));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(q + 1));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(q + 2));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(q + 3));
  }
  a0 = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  return (uint64_t)_mm256_extract_epi64(a0, 0) ^ (uint64_t)_mm256_extract_epi64(a0, 3);
}

// 12 independent FMA chains cover the latency of two FMA ports.
__attribute__((target("avx512f"))) double fma_avx512(int iters) {
  __m512 a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm512_set1_ps(1.0f + 0.001f * (float)j);
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) a[j] = _mm512_fmadd_ps(a[j], m, c);
  __m512 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, a[j]);
  g_roof_sink.fetch_add((uint64_t)_mm512_reduce_add_ps(s), std::memory_order_relaxed);
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
  g_roof_sink.fetch_add((uint64_t)l[0], std::memory_order_relaxed);
  return (double)iters * 12 * 8 * 2;
}

// u8 x s8 dot of 4 into i32 (VNNI): 64 products and 64 adds an instruction.
__attribute__((target("avx512f,avx512vnni"))) double int8_vnni(int iters) {
  __m512i a[12];
  for (int j = 0; j < 12; ++j) a[j] = _mm512_set1_epi32(j);
  const __m512i u = _mm512_set1_epi8(3), v = _mm512_set1_epi8(-2);
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) a[j] = _mm512_dpbusd_epi32(a[j], u, v);
  __m512i s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_epi32(s, a[j]);
  g_roof_sink.fetch_add((uint64_t)_mm512_reduce_add_epi32(s), std::memory_order_relaxed);
  return (double)iters * 12 * 64 * 2;
}

// Without VNNI: u8 x s8 pairs to i16 (maddubs), widened and summed (madd, add).
__attribute__((target("avx2"))) double int8_avx2(int iters) {
  __m256i a[8];
  for (int j = 0; j < 8; ++j) a[j] = _mm256_set1_epi32(j);
  const __m256i u = _mm256_set1_epi8(3), v = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 8; ++j) a[j] = _mm256_add_epi32(a[j], _mm256_madd_epi16(_mm256_maddubs_epi16(u, v), one));
  __m256i s = a[0];
  for (int j = 1; j < 8; ++j) s = _mm256_add_epi32(s, a[j]);
  g_roof_sink.fetch_add((uint64_t)_mm256_extract_epi32(s, 0), std::memory_order_relaxed);
  return (double)iters * 8 * 32 * 2;
}
#endif

double fma_scalar(int iters) {
  float a[8];
  for (int j = 0; j < 8; ++j) a[j] = 1.0f + 0.001f * (float)j;
  for (int i = 0; i < iters; ++i)
    for (int j = 0; j < 8; ++j) a[j] = a[j] * 0.999999f + 1e-7f;
  g_roof_sink.fetch_add((uint64_t)(a[0] + a[7]), std::memory_order_relaxed);
  return (double)iters * 8 * 2;
}

struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512vnni = false;
};

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {
    CpuFeatures c;
#if defined(__x86_64__)
    __builtin_cpu_init();
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512vnni = __builtin_cpu_supports("avx512vnni");
#endif
    return c;
  }();
  return f;
}

// Best rate of kRuns runs of `loop` (which returns the operations it did), in G/s.
template <typename Loop>
double best_rate(Loop loop) {
  double best = 0;
  for (int r = 0; r < kRuns; ++r) {
    const auto t0 = Clock::now();
    const double ops = loop(kFmaIters);
    const double s = seconds_since(t0);
    if (s > 0) best = std::max(best, ops / s / 1e9);
  }
  return best;
}

double measure_f32_per_core() {
#if defined(__x86_64__)
  if (cpu_features().avx512f) return best_rate(fma_avx512);
  if (cpu_features().avx2 && cpu_features().fma) return best_rate(fma_avx2);
#endif
  return best_rate(fma_scalar);
}

double measure_int8_per_core() {
#if defined(__x86_64__)
  if (cpu_features().avx512vnni) return best_rate(int8_vnni);
  if (cpu_features().avx2) return best_rate(int8_avx2);
#endif
  return 0;
}

// Every thread streams its slice; GB/s of the best of kRuns passes.
double measure_read_GBps(int threads, uint64_t llc_bytes) {
  const uint64_t bytes = std::clamp<uint64_t>(llc_bytes + llc_bytes / 4, kMinReadBytes, kMaxReadBytes) / kHugePage * kHugePage;
  const size_t words = bytes / 8;
  auto* buf = static_cast<uint64_t*>(std::aligned_alloc(kHugePage, bytes));
  if (!buf) return 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(buf, bytes, MADV_HUGEPAGE);
#endif
  std::memset(buf, 1, words * 8);  // fault the pages in before timing
  const bool avx2 = cpu_features().avx2;
  const size_t per = (words / (size_t)threads) / 16 * 16;
  auto read = [&](int t) {
#if defined(__x86_64__)
    if (avx2) {
      g_roof_sink.fetch_add(read_avx2(buf + (size_t)t * per, per), std::memory_order_relaxed);
      return;
    }
#endif
    g_roof_sink.fetch_add(read_scalar(buf + (size_t)t * per, per), std::memory_order_relaxed);
  };
  double best = 0;
  for (int r = 0; r < kRuns; ++r) {
    const auto t0 = Clock::now();
    std::vector<std::thread> others;
    for (int t = 1; t < threads; ++t) others.emplace_back(read, t);
    read(0);
    for (auto& th : others) th.join();
    const double s = seconds_since(t0);
    if (s > 0) best = std::max(best, (double)(per * (size_t)threads * 8) / s / 1e9);
  }
  std::free(buf);
  return best;
}

Roofs nominal_roofs(const CpuRoofsQuery& q) {
  // 3 GHz, two FMA ports, 8 GB/s of DRAM bandwidth per core up to 8 cores.
  Roofs r;
  const double cores = std::max(1, q.threads);
  r.f32_GFLOPs = cores * 3.0 * 2 * 2 * (q.simd_width_bits / 32.0);
  r.int8_GOPs = r.f32_GFLOPs * (q.vnni ? 4 : 2);
  r.read_GBps = 8.0 * std::min(cores, 8.0);
  r.source = RoofSource::nominal;
  return r;
}

Roofs measure(const CpuRoofsQuery& q) {
  const char* env = std::getenv("TESSERA_CPU_ROOFS");
  const std::string mode = env ? env : "";
  if (mode == "off") return {};
  if (mode == "nominal") return nominal_roofs(q);
  const int threads = std::max(1, q.threads);
  const double cores = std::min<double>(threads, std::max(1u, std::thread::hardware_concurrency()));
  Roofs r;
  r.f32_GFLOPs = measure_f32_per_core() * cores;
  r.int8_GOPs = measure_int8_per_core() * cores;
  r.read_GBps = measure_read_GBps(threads, q.last_level_cache_bytes);
  r.source = RoofSource::measured_at_open;
  return r;
}

}  // namespace

Roofs cpu_roofs(const CpuRoofsQuery& q) {
  static std::once_flag once;
  static Roofs roofs;
  std::call_once(once, [&] { roofs = measure(q); });
  return roofs;
}

}  // namespace tessera::cpu
