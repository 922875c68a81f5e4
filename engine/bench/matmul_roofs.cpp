#include "engine/bench/matmul_roofs.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "core/half.h"
#include "engine/bench/bandwidth.h"
#include "engine/bench/stats.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tessera {

namespace {

// Byte offsets of a block's f16 scales (GGUF's layouts, core/dtype.h).
std::vector<size_t> f16_scale_offsets(DType t) {
  switch (t) {
    case DType::q8_0:
    case DType::q4_0: return {0};
    case DType::q4_K:
    case DType::q5_K: return {0, 2};
    case DType::q6_K: return {offsetof(BlockQ6_K, d)};
    default: return {};
  }
}

// Random codes and scales, valid f16 scales of a modest size: the kernels'
// speed depends on neither, but NaNs or denormals would be no fair test.
std::vector<std::byte> random_blocks(DType t, int64_t n, int64_t k, std::mt19937& gen) {
  std::vector<std::byte> w(bytes_for(t, n * k));
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::byte& b : w) b = (std::byte)byte(gen);
  const DTypeTraits& tr = traits(t);
  const uint16_t d = f32_to_f16(0.001f);
  for (size_t off = 0; off < w.size(); off += tr.block_bytes)
    for (size_t s : f16_scale_offsets(t)) std::memcpy(w.data() + off + s, &d, 2);
  return w;
}

MatmulRoofCase run_case(ParallelFor& pf, DType dtype, int64_t n, int64_t k, int reps, std::mt19937& gen) {
  const uint64_t roof_bytes = std::max<uint64_t>(4 * last_level_cache_bytes(), uint64_t{1} << 30);
  MatmulRoofCase c;
  c.dtype = dtype;
  c.kernel = kernels::cpu::matmul_kernel_name(dtype, 1);
  c.n = n, c.k = k;
  c.weight_bytes = bytes_for(dtype, n * k);
  const size_t copies = (size_t)std::max<uint64_t>(2, (4 * last_level_cache_bytes() + c.weight_bytes - 1) / c.weight_bytes);
  std::vector<std::vector<std::byte>> w;
  w.push_back(random_blocks(dtype, n, k, gen));
  for (size_t i = 1; i < copies; ++i) w.push_back(w[0]);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x((size_t)k), y((size_t)n);
  for (float& f : x) f = u(gen);
  std::vector<std::byte> ws(kernels::cpu::matmul_workspace_bytes(dtype, 1, k) + 64);
  void* aligned = reinterpret_cast<void*>(((uintptr_t)ws.data() + 63) & ~(uintptr_t)63);

  auto time_once = [&](const std::vector<std::byte>& weights) {
    kernels::MatmulArgs a;
    a.x = x.data();
    a.w = weights.data();
    a.w_dtype = dtype;
    a.y = y.data();
    a.m = 1, a.n = n, a.k = k;
    a.workspace = aligned;
    const auto t0 = std::chrono::steady_clock::now();
    kernels::cpu::matmul(a, pf);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  c.roof_before_GBps = measure_read_bandwidth(pf, roof_bytes).read_GBps;
  time_once(w[0]);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) ms.push_back(time_once(w[(size_t)(i + 1) % copies]));
  c.roof_after_GBps = measure_read_bandwidth(pf, roof_bytes).read_GBps;
  c.median_ms = median(ms);
  c.min_ms = *std::min_element(ms.begin(), ms.end());
  return c;
}

}  // namespace

std::vector<MatmulRoofCase> bench_matmul_roofs(ParallelFor& pf, int64_t n, int64_t k, int reps) {
  std::mt19937 gen(1);
  std::vector<MatmulRoofCase> out;
  for (DType dtype : {DType::q8_0, DType::q4_0, DType::q4_K, DType::q5_K, DType::q6_K})
    out.push_back(run_case(pf, dtype, n, k, reps, gen));
  return out;
}

}  // namespace tessera
