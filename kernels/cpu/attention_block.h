#pragma once
// The paged attention inner kernel (isa_kernels.h, AttentionBlock), written
// once over a family's f32 vector type V and included by each
// attention_block__<isa>.cpp, which supplies V:
//   L (f32 lanes), kDRegs (vectors of head_dim a pass holds per head), R,
//   zero, set1, load, store, load_n / store_n (the first n lanes, the rest 0),
//   load_kv<Kv> / load_kv_n<Kv> (pool elements widened to f32 in registers;
//   for q8_0 and fp8 L lanes from i, a multiple of L, in one 32-element
//   block: the scale times the widened bytes, exact),
//   fma(a, b, c) = a * b + c in one rounding, mul, div, add, sub, max,
//   hmax, hsum, exp, and sum_rows(rows): lane o = the sum of the L
//   floats at rows + o * L.
//
// For up to kAttentionHeadSet query heads at a time:
// 1. Scores, L positions at a time, kScorePositions of them a step: each
//    K row is widened once a column vector and serves every head of the
//    set, q read from memory (one load serving the step's positions); a
//    (head, position)'s lane-wise partial dot stays in a register across
//    every column of the head and goes to the scratch, where sum_rows turns
//    the L positions' partials into one vector of their scores. Lane j of a
//    dot is the sum, in column order, of q * k over the columns j, j + L,
//    ...: the same whatever the step and the heads alongside. The first
//    head set asks for the call's ahead ranges (AttentionBlock::ahead_k), a
//    share per position, so that the requests overlap the arithmetic.
// 2. The online-softmax update per head: the block's max, the rescale of
//    the head's state when it rises (acc, l times exp(m - max)), then
//    e = exp(score - m) per position (0 for the offsets outside [lo, n))
//    and l += their sum.
// 3. V: the heads' accumulators for kDRegs vectors of columns sit in
//    registers while the block's V rows (widened once each) are folded in
//    position order, acc = fma(e, v, acc).
// Every step is the head's own, in one order, so a token's bits do not
// depend on which call, path or thread folds the block; f16, bf16, q8_0 and
// fp8 are widened exactly, so their bits are those of f32 pools of the same
// values.
// (Unnamed namespace, and no std:: templates: each ISA file compiles this
// under its own target flags, see simd_util__x86.h.)
#include <cmath>
#include <cstdint>

#include "kernels/cpu/isa_kernels.h"

namespace tessera::kernels::cpu::detail {
namespace {

enum class Kv { f32, f16, bf16, q8_0, fp8 };

// q8_0 and fp8 rows are 34-byte blocks of 32 (an f16 scale, 32 bytes).
constexpr bool is_block(Kv t) { return t == Kv::q8_0 || t == Kv::fp8; }

// Bytes of `elems` pool elements (a whole number of blocks for the block types).
template <Kv T>
constexpr int64_t kv_bytes(int64_t elems) {
  if constexpr (is_block(T)) return elems / 32 * 34;
  else return elems * (T == Kv::f32 ? 4 : 2);
}

inline int imin(int a, int b) { return a < b ? a : b; }
inline int imax(int a, int b) { return a > b ? a : b; }
inline int64_t imin64(int64_t a, int64_t b) { return a < b ? a : b; }

// The columns of one pass: `regs` vectors from d0, the last holding `last`
// (<= L) columns. Full: head_dim is a multiple of a pass, every vector whole.
template <class V, bool Full>
struct Pass {
  int d0, regs, last;
  bool has(int c) const { return Full || c < regs; }
  bool part(int c) const { return !Full && c == regs - 1 && last < V::L; }
};

template <class V, bool Full>
inline Pass<V, Full> pass_at(int d0, int head_dim) {
  if constexpr (Full) {
    return {d0, V::kDRegs, V::L};
  } else {
    const int regs = imin(V::kDRegs, (head_dim - d0 + V::L - 1) / V::L);
    return {d0, regs, head_dim - d0 - (regs - 1) * V::L};
  }
}

// A kernel's head size: HD > 0 is head_dim fixed at compile time (a
// multiple of a pass), kAnyFull any multiple of a pass, kAnyPart any other.
constexpr int kAnyFull = 0, kAnyPart = -1;
constexpr bool is_full(int hd) { return hd != kAnyPart; }
template <int HD>
inline int dim_of(const AttentionBlock& b) {
  if constexpr (HD > 0) return HD;
  else return b.head_dim;
}

template <class V, bool Full>
inline typename V::R load_cols(const Pass<V, Full>& ps, int c, const float* p) {
  return ps.part(c) ? V::load_n(p, ps.last) : V::load(p);
}

// The block types' head_dim is a multiple of 32, so of every L: no vector is partial.
template <class V, Kv T, bool Full>
inline typename V::R load_kv_cols(const Pass<V, Full>& ps, int c, const void* row, int64_t i) {
  if constexpr (is_block(T)) return V::template load_kv<T>(row, i);
  else return ps.part(c) ? V::template load_kv_n<T>(row, i, ps.last) : V::template load_kv<T>(row, i);
}

template <Kv T>
inline const void* kv_row(const void* base, int64_t o, int64_t stride) {
  return static_cast<const char*>(base) + kv_bytes<T>(o * stride);
}

// Asks for the lines of b's ahead ranges from byte `from` to `to` (a hint: no arithmetic).
inline void ask_ahead(const AttentionBlock& b, int64_t from, int64_t to) {
  for (int64_t off = from; off < to; off += 64) {
    __builtin_prefetch(b.ahead_k + off);
    __builtin_prefetch(b.ahead_v + off);
  }
}

// The lane-wise partial dots of positions [o, o + P) (P of them, each its
// K row widened once a column vector and serving every head) into
// part[(h * L + o - o0) * L]: every column vector of the head, in order, so
// acc[h][p] lives in a register from the first column to the last (q read
// from memory, one load serving the P positions).
template <class V, Kv T, int HS, int P, int HD>
inline void score_positions(const AttentionBlock& b, const float* const* q, int o, int o0, float* part) {
  using R = typename V::R;
  constexpr int L = V::L;
  constexpr bool Full = is_full(HD);
  const int head_dim = dim_of<HD>(b);
  R acc[HS][P];
  for (int h = 0; h < HS; ++h)
    for (int p = 0; p < P; ++p) acc[h][p] = V::zero();
  const void* krow[P];
  for (int p = 0; p < P; ++p) krow[p] = kv_row<T>(b.k, o + p, b.kv_stride);
  const int vecs = Full ? head_dim / L : (head_dim + L - 1) / L;
  for (int c = 0; c < vecs; ++c) {
    const int d = c * L;
    const bool part_vec = !Full && d + L > head_dim;
    R kv[P];
    for (int p = 0; p < P; ++p) {
      if constexpr (is_block(T)) kv[p] = V::template load_kv<T>(krow[p], d);
      else kv[p] = part_vec ? V::template load_kv_n<T>(krow[p], d, head_dim - d) : V::template load_kv<T>(krow[p], d);
    }
    for (int h = 0; h < HS; ++h) {
      const R qv = part_vec ? V::load_n(q[h] + d, head_dim - d) : V::load(q[h] + d);
      for (int p = 0; p < P; ++p) acc[h][p] = V::fma(qv, kv[p], acc[h][p]);
    }
  }
  for (int h = 0; h < HS; ++h)
    for (int p = 0; p < P; ++p) V::store(part + (h * L + o + p - o0) * L, acc[h][p]);
}

// Step 1 for heads [h0, h0 + HS): scores of offsets [lo, n) into
// sc[h * n_pad + o], -inf at the other offsets of their L-position chunks.
template <class V, Kv T, int HS, int HD>
void block_scores(const AttentionBlock& b, int h0, float* part, float* sc, int n_pad) {
  constexpr int L = V::L, P = V::kScorePositions;
  // The first head set asks for the ahead ranges as it scores, a share per
  // position (all at once before the arithmetic was slower).
  const bool prefetch = h0 == 0 && b.ahead_bytes > 0;
  const int64_t share = (b.ahead_bytes / (b.n - b.lo) + 63) / 64 * 64;
  const float* q[HS];
  for (int h = 0; h < HS; ++h) q[h] = b.q + (h0 + h) * b.q_stride;
  for (int o0 = b.lo / L * L; o0 < b.n; o0 += L) {
    const int oa = imax(b.lo, o0), ob = imin(b.n, o0 + L);
    for (int o = o0; o < o0 + L; ++o)
      if (o < oa || o >= ob)
        for (int h = 0; h < HS; ++h) V::store(part + (h * L + o - o0) * L, V::zero());
    int o = oa;
    for (; o + P <= ob; o += P) {
      if (prefetch) ask_ahead(b, (o - b.lo) * share, imin64((o + P - b.lo) * share, b.ahead_bytes));
      score_positions<V, T, HS, P, HD>(b, q, o, o0, part);
    }
    for (; o < ob; ++o) {
      if (prefetch) ask_ahead(b, (o - b.lo) * share, imin64((o + 1 - b.lo) * share, b.ahead_bytes));
      score_positions<V, T, HS, 1, HD>(b, q, o, o0, part);
    }
    for (int h = 0; h < HS; ++h) {
      const typename V::R dot = V::sum_rows(part + h * L * L);
      // 1/sqrt(head_dim) is applied as llama2.c does, by division.
      const typename V::R s = b.scale != 0.0f ? V::mul(dot, V::set1(b.scale)) : V::div(dot, V::set1(b.sqrt_hd));
      float* out = sc + h * n_pad + o0;
      V::store(out, s);
      // gemma2's soft-cap, as ggml computes it: scale by 1/cap, tanh, scale by cap.
      if (b.softcap > 0.0f)
        for (int o = oa; o < ob; ++o) out[o - o0] = b.softcap * tanhf(out[o - o0] * b.inv_softcap);
      for (int o = o0; o < o0 + L; ++o)
        if (o < oa || o >= ob) out[o - o0] = -INFINITY;
    }
  }
}

// Step 2 for heads [h0, h0 + HS): each state takes the block's max (one
// exp gives every head's rescale factor), sc's scores become their
// exponentials, and alpha[h] is the factor acc is to be scaled by (1: none).
template <class V, int HS>
bool block_softmax(const AttentionBlock& b, int h0, float* sc, int n_pad, float* alpha) {
  using R = typename V::R;
  constexpr int L = V::L;
  static_assert(HS <= L);
  const int o_begin = b.lo / L * L;
  float diff[L];
  bool rise[HS], any = false;
  for (int j = 0; j < L; ++j) diff[j] = 0.0f;
  for (int h = 0; h < HS; ++h) {
    R mx = V::set1(-INFINITY);
    for (int o0 = o_begin; o0 < b.n; o0 += L) mx = V::max(mx, V::load(sc + h * n_pad + o0));
    const float block_max = V::hmax(mx);
    float& m = b.m[(h0 + h) * b.ml_stride];
    rise[h] = block_max > m;
    if (rise[h]) {
      diff[h] = m - block_max;  // -inf before the first block: the factor is 0
      m = block_max;
      any = true;
    }
  }
  if (any) V::store(diff, V::exp(V::load(diff)));
  for (int h = 0; h < HS; ++h) {
    float& l = b.l[(h0 + h) * b.ml_stride];
    alpha[h] = rise[h] ? diff[h] : 1.0f;
    if (rise[h]) l *= alpha[h];
    const R mv = V::set1(b.m[(h0 + h) * b.ml_stride]);
    float* s = sc + h * n_pad;
    R sum = V::zero();
    for (int o0 = o_begin; o0 < b.n; o0 += L) {
      const R e = V::exp(V::sub(V::load(s + o0), mv));
      V::store(s + o0, e);
      sum = V::add(sum, e);
    }
    l += V::hsum(sum);
  }
  return any;
}

// Step 3 for heads [h0, h0 + HS): acc = acc * alpha + sum of e * v over [lo, n).
template <class V, Kv T, int HS, int HD>
void block_values(const AttentionBlock& b, int h0, const float* sc, int n_pad, const float* alpha, bool rescale) {
  using R = typename V::R;
  constexpr int L = V::L, D = V::kDRegs;
  constexpr bool Full = is_full(HD);
  const int head_dim = dim_of<HD>(b);
  for (int d0 = 0; d0 < head_dim; d0 += D * L) {
    const Pass<V, Full> ps = pass_at<V, Full>(d0, head_dim);
    R acc[HS][D];
    for (int h = 0; h < HS; ++h)
      for (int c = 0; c < D; ++c)
        if (ps.has(c)) {
          acc[h][c] = load_cols(ps, c, b.acc + (h0 + h) * b.acc_stride + d0 + c * L);
          if (rescale) acc[h][c] = V::mul(acc[h][c], V::set1(alpha[h]));
        }
    for (int o = b.lo; o < b.n; ++o) {
      const void* vrow = kv_row<T>(b.v, o, b.kv_stride);
      R e[HS];
      for (int h = 0; h < HS; ++h) e[h] = V::set1(sc[h * n_pad + o]);
      for (int c = 0; c < D; ++c)
        if (ps.has(c)) {
          const R vv = load_kv_cols<V, T>(ps, c, vrow, d0 + c * L);
          for (int h = 0; h < HS; ++h) acc[h][c] = V::fma(e[h], vv, acc[h][c]);
        }
    }
    for (int h = 0; h < HS; ++h)
      for (int c = 0; c < D; ++c)
        if (ps.has(c)) {
          float* out = b.acc + (h0 + h) * b.acc_stride + d0 + c * L;
          if (ps.part(c))
            V::store_n(out, acc[h][c], ps.last);
          else
            V::store(out, acc[h][c]);
        }
  }
}

template <class V, Kv T, int HS, int HD>
void fold_heads(const AttentionBlock& b, int h0) {
  constexpr int L = V::L;
  static_assert(L <= kAttentionMaxLanes && HS <= kAttentionHeadSet);
  const int n_pad = (b.n + L - 1) / L * L;
  float* part = b.scratch;
  float* sc = b.scratch + kAttentionHeadSet * kAttentionMaxLanes * kAttentionMaxLanes;
  block_scores<V, T, HS, HD>(b, h0, part, sc, n_pad);
  float alpha[HS];
  const bool rescale = block_softmax<V, HS>(b, h0, sc, n_pad, alpha);
  block_values<V, T, HS, HD>(b, h0, sc, n_pad, alpha, rescale);
}

template <class V, Kv T, int HD>
void fold_all(const AttentionBlock& b) {
  for (int h0 = 0; h0 < b.heads; h0 += kAttentionHeadSet) {
    switch (imin(kAttentionHeadSet, b.heads - h0)) {
      case 1: fold_heads<V, T, 1, HD>(b, h0); break;
      case 2: fold_heads<V, T, 2, HD>(b, h0); break;
      case 3: fold_heads<V, T, 3, HD>(b, h0); break;
      default: fold_heads<V, T, 4, HD>(b, h0); break;
    }
  }
}

// The most common head size (128: Llama, Mistral, Qwen, Phi-3) gets its own
// code, whose loops over the columns the compiler unrolls whole (with
// head_dim a run-time value, the column loops and the spills around them
// took a quarter of a block's time). One size only: each adds every type's
// and head set's instantiations to the four ISA files' build. It does the
// same operations in the same order as the run-time case.
template <class V, Kv T>
void fold_block(const AttentionBlock& b) {
  static_assert(128 % (V::kDRegs * V::L) == 0);
  if (b.head_dim == 128) return fold_all<V, T, 128>(b);
  if (b.head_dim % (V::kDRegs * V::L) == 0) return fold_all<V, T, kAnyFull>(b);
  return fold_all<V, T, kAnyPart>(b);
}

// The family's AttentionBlockFn: K and V in the pool's dtype.
template <class V>
void attention_block(const AttentionBlock& b) {
  if (b.n <= b.lo) return;
  switch (b.kv_dtype) {
    case DType::f16: return fold_block<V, Kv::f16>(b);
    case DType::bf16: return fold_block<V, Kv::bf16>(b);
    case DType::q8_0: return fold_block<V, Kv::q8_0>(b);
    case DType::fp8_e4m3: return fold_block<V, Kv::fp8>(b);
    default: return fold_block<V, Kv::f32>(b);
  }
}

// The family's vector exp over an array (tests hold it to std::exp).
template <class V>
void exp_array(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + V::L <= n; i += V::L) V::store(y + i, V::exp(V::load(x + i)));
  if (i < n) V::store_n(y + i, V::exp(V::load_n(x + i, (int)(n - i))), (int)(n - i));
}

}  // namespace
}  // namespace tessera::kernels::cpu::detail
