#include "engine/bench/matmul_layouts.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "core/quant.h"
#include "engine/bench/stats.h"
#include "core/weight_layout.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tessera {

namespace {


MatmulLayoutCase run_case(ParallelFor& pf, DType dtype, int64_t m, int64_t n, int64_t k, int reps, std::mt19937& gen) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t row_bytes = (int64_t)bytes_for(dtype, k);
  std::vector<std::byte> rows((size_t)(n * row_bytes));
  std::vector<float> row_f32((size_t)k);
  for (int64_t r = 0; r < n; ++r) {
    for (float& f : row_f32) f = u(gen);
    quantize_row(dtype, row_f32.data(), rows.data() + r * row_bytes, k);
  }
  std::vector<std::byte> x4 = repack_rows_x4(dtype, n, k, rows).value();
  std::vector<float> x((size_t)(m * k)), y((size_t)(m * n));
  for (float& f : x) f = u(gen);
  std::vector<std::byte> ws(kernels::cpu::matmul_workspace_bytes(dtype, m, k) + 64);
  void* aligned = reinterpret_cast<void*>(((uintptr_t)ws.data() + 63) & ~(uintptr_t)63);

  auto time_once = [&](const std::vector<std::byte>& w, WeightLayout layout) {
    kernels::MatmulArgs a;
    a.x = x.data();
    a.w = w.data();
    a.w_dtype = dtype;
    a.w_layout = layout;
    a.y = y.data();
    a.m = m, a.n = n, a.k = k;
    a.workspace = aligned;
    const auto t0 = std::chrono::steady_clock::now();
    kernels::cpu::matmul(a, pf);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  time_once(rows, WeightLayout::rows);
  time_once(x4, WeightLayout::rows_x4);
  std::vector<double> t_rows, t_x4;
  for (int i = 0; i < reps; ++i) {
    t_rows.push_back(time_once(rows, WeightLayout::rows));
    t_x4.push_back(time_once(x4, WeightLayout::rows_x4));
  }
  return {dtype, m, n, k, median(t_rows), median(t_x4), *std::min_element(t_rows.begin(), t_rows.end()),
          *std::min_element(t_x4.begin(), t_x4.end())};
}

}  // namespace

std::vector<MatmulLayoutCase> bench_matmul_layouts(ParallelFor& pf, int reps) {
  std::mt19937 gen(1);
  std::vector<MatmulLayoutCase> out;
  for (DType dtype : {DType::q8_0, DType::q4_0})
    for (int64_t n : {4096, 11008})
      for (int64_t m : {1, 64}) out.push_back(run_case(pf, dtype, m, n, 4096, reps, gen));
  return out;
}

}  // namespace tessera
