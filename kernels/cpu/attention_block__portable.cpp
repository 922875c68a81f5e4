// The paged attention inner kernel (attention_block.h) in portable C++: a
// "vector" of 8 floats the compiler may vectorize, a * b + c in two roundings
// (the portable files are built without contraction), exp_f32_portable per lane.
#include "kernels/cpu/attention_block.h"
#include "core/half.h"
#include "kernels/kv_element.h"
#include "kernels/cpu/exp_f32__portable.h"

namespace tessera::kernels::cpu::detail {

namespace {

struct VPortable {
  static constexpr int L = 8, kDRegs = 2, kScorePositions = 2;
  struct R {
    float x[8];
  };
  template <typename F>
  static R map(F f) {
    R r;
    for (int j = 0; j < L; ++j) r.x[j] = f(j);
    return r;
  }
  static R zero() { return set1(0.0f); }
  static R set1(float v) { return map([&](int) { return v; }); }
  static R load(const float* p) { return map([&](int j) { return p[j]; }); }
  static void store(float* p, R v) {
    for (int j = 0; j < L; ++j) p[j] = v.x[j];
  }
  static R load_n(const float* p, int n) { return map([&](int j) { return j < n ? p[j] : 0.0f; }); }
  static void store_n(float* p, R v, int n) {
    for (int j = 0; j < n; ++j) p[j] = v.x[j];
  }
  template <Kv T>
  static float elem(const void* row, int64_t i) {
    if constexpr (T == Kv::f32) return static_cast<const float*>(row)[i];
    else if constexpr (T == Kv::f16) return f16_to_f32(static_cast<const uint16_t*>(row)[i]);
    else if constexpr (T == Kv::q8_0) return tessera::kernels::load_kv(row, DType::q8_0, i);
    else if constexpr (T == Kv::fp8) return tessera::kernels::load_kv(row, DType::fp8_e4m3, i);
    else return bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
  }
  template <Kv T>
  static R load_kv(const void* row, int64_t i) { return map([&](int j) { return elem<T>(row, i + j); }); }
  template <Kv T>
  static R load_kv_n(const void* row, int64_t i, int n) {
    return map([&](int j) { return j < n ? elem<T>(row, i + j) : 0.0f; });
  }
  static R fma(R a, R b, R c) { return map([&](int j) { return a.x[j] * b.x[j] + c.x[j]; }); }
  static R mul(R a, R b) { return map([&](int j) { return a.x[j] * b.x[j]; }); }
  static R div(R a, R b) { return map([&](int j) { return a.x[j] / b.x[j]; }); }
  static R add(R a, R b) { return map([&](int j) { return a.x[j] + b.x[j]; }); }
  static R sub(R a, R b) { return map([&](int j) { return a.x[j] - b.x[j]; }); }
  static R max(R a, R b) { return map([&](int j) { return a.x[j] > b.x[j] ? a.x[j] : b.x[j]; }); }
  static float hmax(R a) {
    float m = a.x[0];
    for (int j = 1; j < L; ++j) m = a.x[j] > m ? a.x[j] : m;
    return m;
  }
  static float hsum(R a) {
    float s = 0.0f;
    for (int j = 0; j < L; ++j) s += a.x[j];
    return s;
  }
  static R exp(R a) { return map([&](int j) { return exp_f32_portable(a.x[j]); }); }
  static R sum_rows(const float* rows) { return map([&](int o) { return hsum(load(rows + o * L)); }); }
};

}  // namespace

void attention_block__portable(const AttentionBlock& b) { attention_block<VPortable>(b); }
void attention_exp__portable(const float* x, float* y, int64_t n) { exp_array<VPortable>(x, y, n); }

}  // namespace tessera::kernels::cpu::detail
