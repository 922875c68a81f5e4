#include "engine/bench/matmul_roofs.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

#include "core/half.h"
#include "core/quant.h"
#include "core/huge_pages.h"
#include "core/read_bandwidth.h"
#include "engine/bench/stats.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tessera {

namespace {

MatmulRoofCase run_case(ParallelFor& pf, DType dtype, int64_t n, int64_t k, int reps, std::mt19937& gen) {
  MatmulRoofCase c;
  c.dtype = dtype;
  c.kernel = kernels::cpu::matmul_kernel_name(dtype, 1);
  c.n = n, c.k = k;
  c.weight_bytes = bytes_for(dtype, n * k);
  const uint64_t stride = (c.weight_bytes + 4095) / 4096 * 4096, read_bytes = c.weight_bytes / 256 * 256;
  const uint64_t copies = std::max<uint64_t>(2, (4 * last_level_cache_bytes() + c.weight_bytes - 1) / c.weight_bytes);
  const HostBytes weights = allocate_huge_pages(copies * stride), roof = allocate_huge_pages(copies * read_bytes);
  if (weights == nullptr || roof == nullptr) return c;
  const std::vector<std::byte> w0 = random_blocks(dtype, n, k, gen);
  for (uint64_t i = 0; i < copies; ++i) std::memcpy(weights.get() + i * stride, w0.data(), w0.size());
  std::memset(roof.get(), 0x5a, copies * read_bytes);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x((size_t)k), y((size_t)n);
  for (float& f : x) f = u(gen);
  std::vector<std::byte> ws(kernels::cpu::matmul_workspace_bytes(dtype, 1, k) + 64);
  void* aligned = reinterpret_cast<void*>(((uintptr_t)ws.data() + 63) & ~(uintptr_t)63);

  auto gemv_seconds = [&](uint64_t copy) {
    kernels::MatmulArgs a;
    a.x = x.data();
    a.w = weights.get() + copy * stride;
    a.w_dtype = dtype;
    a.y = y.data();
    a.m = 1, a.n = n, a.k = k;
    a.workspace = aligned;
    const auto t0 = std::chrono::steady_clock::now();
    kernels::cpu::matmul(a, pf);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto read_seconds = [&](uint64_t copy) { return time_read_pass(pf, roof.get() + copy * read_bytes, read_bytes); };
  gemv_seconds(0), read_seconds(0);  // warm-up: threads, frequency, TLBs
  std::vector<double> gemv_s, read_GBps, share;
  for (int i = 0; i < reps; ++i) {
    const uint64_t copy = (uint64_t)(i + 1) % copies;
    double g, r;
    if (i % 2) r = read_seconds(copy), g = gemv_seconds(copy);
    else g = gemv_seconds(copy), r = read_seconds(copy);
    gemv_s.push_back(g);
    read_GBps.push_back((double)read_bytes / r / 1e9);
    share.push_back(((double)c.weight_bytes / g) / ((double)read_bytes / r));
  }
  c.median_ms = 1e3 * median(gemv_s);
  c.min_ms = 1e3 * *std::min_element(gemv_s.begin(), gemv_s.end());
  c.roof_GBps = median(read_GBps);
  c.share_of_roof = median(share);
  return c;
}

}  // namespace

// Byte offsets of a block's f16 scales (GGUF's layouts, core/dtype.h).
static std::vector<size_t> f16_scale_offsets(DType t) {
  switch (t) {
    case DType::q8_0:
    case DType::q4_0:
    case DType::q5_0:
    case DType::iq4_nl:
    case DType::iq4_xs: return {0};
    case DType::q4_1:
    case DType::q5_1:
    case DType::q4_K:
    case DType::q5_K: return {0, 2};
    case DType::q6_K: return {offsetof(BlockQ6_K, d)};
    case DType::q2_K: return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case DType::q3_K: return {offsetof(BlockQ3_K, d)};
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

std::vector<std::byte> random_weights(DType t, int64_t n, int64_t k, std::mt19937& gen) {
  if (traits(t).quantized) return random_blocks(t, n, k, gen);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  std::vector<float> f((size_t)(n * k));
  for (float& x : f) x = u(gen);
  std::vector<std::byte> b(bytes_for(t, n * k));
  quantize_row(t, f.data(), b.data(), n * k);
  return b;
}

std::vector<MatmulRoofCase> bench_matmul_roofs(ParallelFor& pf, int64_t n, int64_t k, int reps) {
  std::mt19937 gen(1);
  std::vector<MatmulRoofCase> out;
  for (DType dtype : {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::iq4_nl, DType::q2_K,
                      DType::q3_K, DType::q4_K, DType::q5_K, DType::q6_K, DType::iq4_xs})
    out.push_back(run_case(pf, dtype, n, k, reps, gen));
  return out;
}

}  // namespace tessera
