#include "core/read_bandwidth.h"

#include "core/huge_pages.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessera {
namespace {

constexpr uint64_t kStep = 256;               // bytes per loop iteration of every read kernel
constexpr uint64_t kChunk = uint64_t{1} << 20;  // bytes a thread takes at a time (a multiple of kStep)

using ReadFn = uint64_t (*)(const std::byte* p, uint64_t n);  // n: a multiple of kStep, p 64-byte aligned

// Several independent accumulators so that neither the loop nor a
// dependency chain, only memory, sets the pace.
uint64_t read_portable(const std::byte* p, uint64_t n) {
  uint64_t acc[8] = {};
  for (uint64_t i = 0; i < n; i += 64) {
    for (int j = 0; j < 8; ++j) {
      uint64_t v;
      std::memcpy(&v, p + i + 8 * j, 8);
      acc[j] ^= v;
    }
  }
  uint64_t r = 0;
  for (uint64_t v : acc) r ^= v;
  return r;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t read_avx2(const std::byte* p, uint64_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (uint64_t i = 0; i < n; i += kStep) {
    const __m256i* q = reinterpret_cast<const __m256i*>(p + i);
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(q + 0));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(q + 1));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(q + 2));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(q + 3));
    a4 = _mm256_xor_si256(a4, _mm256_load_si256(q + 4));
    a5 = _mm256_xor_si256(a5, _mm256_load_si256(q + 5));
    a6 = _mm256_xor_si256(a6, _mm256_load_si256(q + 6));
    a7 = _mm256_xor_si256(a7, _mm256_load_si256(q + 7));
  }
  a0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3)),
                        _mm256_xor_si256(_mm256_xor_si256(a4, a5), _mm256_xor_si256(a6, a7)));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), a0);
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}

__attribute__((target("avx512f"))) uint64_t read_avx512f(const std::byte* p, uint64_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (uint64_t i = 0; i < n; i += kStep) {
    const __m512i* q = reinterpret_cast<const __m512i*>(p + i);
    a0 = _mm512_xor_si512(a0, _mm512_load_si512(q + 0));
    a1 = _mm512_xor_si512(a1, _mm512_load_si512(q + 1));
    a2 = _mm512_xor_si512(a2, _mm512_load_si512(q + 2));
    a3 = _mm512_xor_si512(a3, _mm512_load_si512(q + 3));
  }
  a0 = _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3));
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, a0);
  uint64_t r = 0;
  for (uint64_t v : lanes) r ^= v;
  return r;
}
#endif

struct ReadKernel {
  ReadFn fn;
  const char* name;
};

// Chosen once, from the CPU the process runs on.
ReadKernel pick_read_kernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {read_avx512f, "avx512f"};
  if (__builtin_cpu_supports("avx2")) return {read_avx2, "avx2"};
#endif
  return {read_portable, "portable"};
}

// Keeps the loads observable: every chunk's result ends up here.
volatile uint64_t g_bandwidth_sink = 0;

uint64_t parse_cache_size(const std::string& s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return 0;
  switch (*end) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
  }
}

}  // namespace

uint64_t read_probe_bytes(uint64_t llc) { return std::max<uint64_t>(4 * llc, uint64_t{64} << 20); }

uint64_t last_level_cache_bytes() {
  uint64_t largest = 0;
  for (int i = 0; i < 16; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    if (!f) continue;
    std::string s;
    f >> s;
    largest = std::max(largest, parse_cache_size(s));
  }
  return largest ? largest : uint64_t{32} << 20;
}

double time_read_pass(ParallelFor& pf, const std::byte* p, uint64_t bytes) {
  static const ReadKernel kernel = pick_read_kernel();
  const int64_t chunks = (int64_t)((bytes + kChunk - 1) / kChunk);
  std::atomic<uint64_t> sink{0};
  const auto t0 = std::chrono::steady_clock::now();
  pf.run(chunks, 1, [&](int64_t c0, int64_t c1) {
    uint64_t r = 0;
    for (int64_t c = c0; c < c1; ++c) r ^= kernel.fn(p + c * kChunk, std::min(kChunk, bytes - (uint64_t)c * kChunk));
    sink.fetch_xor(r, std::memory_order_relaxed);
  });
  const auto t1 = std::chrono::steady_clock::now();
  g_bandwidth_sink = g_bandwidth_sink ^ sink.load();
  return std::chrono::duration<double>(t1 - t0).count();
}

BandwidthResult measure_read_bandwidth(ParallelFor& pf, uint64_t bytes, int reps) {
  static const ReadKernel kernel = pick_read_kernel();
  BandwidthResult result;
  result.kernel = kernel.name;
  bytes = std::max(bytes / kStep * kStep, kStep);
  reps = std::max(reps, 1);

  const HostBytes mem = allocate_huge_pages(bytes);
  if (!mem) return result;
  const int64_t chunks = (int64_t)((bytes + kChunk - 1) / kChunk);
  auto chunk_len = [&](int64_t c) { return std::min(kChunk, bytes - (uint64_t)c * kChunk); };

  // Fault every page in (from the threads that will read them) before timing.
  pf.run(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) std::memset(mem.get() + c * kChunk, 0x5a, chunk_len(c));
  });

  std::atomic<uint64_t> sink{0};
  auto pass = [&] {
    pf.run(chunks, 1, [&](int64_t c0, int64_t c1) {
      uint64_t r = 0;
      for (int64_t c = c0; c < c1; ++c) r ^= kernel.fn(mem.get() + c * kChunk, chunk_len(c));
      sink.fetch_xor(r, std::memory_order_relaxed);
    });
  };
  pass();  // warm-up: TLBs, thread wake-up, frequency
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    const auto t1 = std::chrono::steady_clock::now();
    seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  g_bandwidth_sink = g_bandwidth_sink ^ sink.load();

  std::sort(seconds.begin(), seconds.end());
  const double median = reps % 2 ? seconds[(size_t)reps / 2]
                                 : 0.5 * (seconds[(size_t)reps / 2 - 1] + seconds[(size_t)reps / 2]);
  result.bytes = bytes;
  result.reps = reps;
  result.read_GBps = median > 0 ? (double)bytes / median / 1e9 : 0.0;
  result.best_GBps = seconds[0] > 0 ? (double)bytes / seconds[0] / 1e9 : 0.0;
  return result;
}

}  // namespace tessera
