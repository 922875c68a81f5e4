// Paged attention, one path per sequence (docs/backends.md, "CPU attention"):
//
// * A decode sequence (one query token) is split over its context: each
//   (sequence, KV head) is cut into pieces of at least kMinSplitPositions
//   positions (whole blocks), each piece is one work unit that leaves, for
//   every query head of the group, (max, sum of exponentials, unnormalized
//   sum of V) in the workspace, and a second pass merges the pieces. One
//   decode token with a long context thus keeps every thread busy, and the
//   heads of a group share each K/V row they read.
// * A prefill chunk (several query tokens) is tiled: a unit takes up to
//   kQueryTile consecutive query tokens of one sequence and every head of one
//   KV head group, and walks the context block by block, each loaded K/V
//   block serving all of the tile's rows (online softmax), instead of one
//   pass over the whole context per (token, head).
//
// Units are dealt round-robin to lanes; lane c owns the region
// [partials_end + c * lane_floats, + lane_floats) of the workspace (one
// block of scores, then a max and a sum per tile row), and the lanes run as
// the ParallelFor's items, so no two threads share a region.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

namespace {

// A decode piece is never shorter than this (unless the context is): below
// it the merge costs more than the parallelism gains.
constexpr int64_t kMinSplitPositions = 128;
// Query tokens per prefill unit: each K/V block loaded serves this many rows
// (times the head group) while it is in L1.
constexpr int64_t kQueryTile = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Work items per thread: a few, so uneven units still balance.
int64_t lane_cap(int n_threads) { return 4 * (int64_t)std::max(1, n_threads); }

int64_t lane_floats(const AttentionParams& p) {
  return p.block_size + 2 * kQueryTile * (p.n_heads / std::max(1, p.n_kv_heads));
}

// The most decode pieces a call can produce: each of n_decode * n_kv_heads
// (sequence, KV head) pairs gets ceil(lane_cap / pairs) pieces at most, and
// never more than its context holds minimum pieces.
int64_t max_pieces(int64_t pairs, int64_t max_context, int n_threads) {
  return std::min(pairs + lane_cap(n_threads), pairs * ceil_div(std::max<int64_t>(1, max_context), kMinSplitPositions));
}

// Per (decode sequence, query head, piece): max, sum, then head_dim accumulators.
int64_t partial_floats(const AttentionParams& p) { return (int64_t)p.head_dim + 2; }

// Pieces per (decode sequence, head) asked for: enough that the call's
// decode pieces fill the lanes.
int64_t pieces_target(int64_t pairs, int n_threads) {
  return pairs > 0 ? std::max<int64_t>(1, ceil_div(lane_cap(n_threads), pairs)) : 1;
}

// Positions per piece of a decode context of len: whole blocks, so a piece
// never splits a block, and at least kMinSplitPositions.
int64_t piece_span(int64_t len, int64_t target, int32_t block_size) {
  const int64_t want = std::max(kMinSplitPositions, ceil_div(len, target));
  return ceil_div(want, block_size) * block_size;
}

int64_t piece_count(int64_t len, int64_t target, int32_t block_size) {
  return std::max<int64_t>(1, ceil_div(len, piece_span(len, target, block_size)));
}

struct Shape {
  const AttentionArgs& a;
  int group;            // query heads per KV head
  int64_t q_row, kv_row;
  float sqrt_hd;
  int64_t target_pieces;  // pieces_target() of the call

  int64_t q_len(int32_t s) const { return (int64_t)a.query_start[s + 1] - a.query_start[s]; }
  int64_t kv_len(int32_t s, int64_t t) const {
    return a.p.causal ? (int64_t)a.positions[t] + 1 : (int64_t)a.seq_lens[s];
  }
  int64_t span(int64_t len) const { return piece_span(len, target_pieces, a.p.block_size); }
  int64_t pieces(int64_t len) const { return piece_count(len, target_pieces, a.p.block_size); }
  // Decode pieces per (sequence, KV head); 0 for a sequence that is not decoding.
  int64_t decode_pieces(int32_t s) const { return q_len(s) == 1 ? pieces(kv_len(s, a.query_start[s])) : 0; }
  // Work units of sequence s: pieces or query tiles, times KV heads.
  int64_t units(int32_t s) const {
    const int64_t n = q_len(s);
    return (n == 1 ? decode_pieces(s) : ceil_div(n, kQueryTile)) * a.p.n_kv_heads;
  }
};

// The running softmax state of one query row (one token, one head).
struct Row {
  const float* q;
  float* acc;  // head_dim, unnormalized
  float* m;
  float* l;
};

// Folds positions [j0, j0 + n) of one block, at pool slots base.., into `r`.
void fold_block(const Shape& sh, const detail::IsaKernels& isa, const Row& r, int64_t base, int64_t head_off, int64_t n,
                float* scores) {
  const AttentionParams& p = sh.a.p;
  const int hd = p.head_dim;
  float block_max = -INFINITY;
  for (int64_t o = 0; o < n; ++o) {
    const float dot = isa.dot(r.q, sh.a.k_pool + (base + o) * sh.kv_row + head_off, hd);
    // 1/sqrt(head_dim) is applied as llama2.c does, by division.
    scores[o] = p.scale != 0.0f ? dot * p.scale : dot / sh.sqrt_hd;
    block_max = std::max(block_max, scores[o]);
  }
  if (block_max > *r.m) {
    const float alpha = expf(*r.m - block_max);  // 0 before the first block
    if (*r.l > 0.0f)
      for (int d = 0; d < hd; ++d) r.acc[d] *= alpha;
    *r.l *= alpha;
    *r.m = block_max;
  }
  for (int64_t o = 0; o < n; ++o) {
    const float e = expf(scores[o] - *r.m);
    *r.l += e;
    isa.axpy(e, sh.a.v_pool + (base + o) * sh.kv_row + head_off, r.acc, hd);
  }
}

// Piece `piece` of decode sequence s for the query heads of KV head g; head
// h's partial is at partials + (h * n_pieces + piece) * partial_floats.
void decode_piece(const Shape& sh, const detail::IsaKernels& isa, int32_t s, int g, int64_t piece, int64_t n_pieces,
                  float* partials, float* scores) {
  const AttentionParams& p = sh.a.p;
  const int64_t t = sh.a.query_start[s];
  const int64_t len = sh.kv_len(s, t);
  const int64_t span = sh.span(len);
  const int32_t* table = sh.a.block_tables + (int64_t)s * sh.a.max_blocks_per_seq;
  const int64_t head_off = (int64_t)g * p.head_dim;
  auto row = [&](int hh) {
    const int64_t h = (int64_t)g * sh.group + hh;
    float* partial = partials + (h * n_pieces + piece) * partial_floats(p);
    return Row{sh.a.q + t * sh.q_row + h * p.head_dim, partial + 2, &partial[0], &partial[1]};
  };
  for (int hh = 0; hh < sh.group; ++hh) {
    const Row r = row(hh);
    *r.m = -INFINITY;
    *r.l = 0.0f;
    std::fill(r.acc, r.acc + p.head_dim, 0.0f);
  }
  const int64_t end = std::min(len, (piece + 1) * span);
  for (int64_t j0 = piece * span; j0 < end; j0 += p.block_size) {
    const int64_t base = (int64_t)table[j0 / p.block_size] * p.block_size;
    for (int hh = 0; hh < sh.group; ++hh)
      fold_block(sh, isa, row(hh), base, head_off, std::min<int64_t>(p.block_size, end - j0), scores);
  }
}

// out = sum_p e^(m_p - M) acc_p / sum_p e^(m_p - M) l_p over the pieces.
void merge_pieces(const AttentionParams& p, const float* partials, int64_t n_pieces, float* out) {
  const int64_t stride = partial_floats(p);
  float big = -INFINITY;
  for (int64_t i = 0; i < n_pieces; ++i)
    if (partials[i * stride + 1] > 0.0f) big = std::max(big, partials[i * stride]);
  std::fill(out, out + p.head_dim, 0.0f);
  float denom = 0.0f;
  for (int64_t i = 0; i < n_pieces; ++i) {
    const float* part = partials + i * stride;
    if (!(part[1] > 0.0f)) continue;
    const float w = expf(part[0] - big);
    denom += w * part[1];
    for (int d = 0; d < p.head_dim; ++d) out[d] += w * part[2 + d];
  }
  if (denom > 0.0f)
    for (int d = 0; d < p.head_dim; ++d) out[d] /= denom;
}

// Query tokens [t0, t0 + nq) of prefill sequence s, the heads of KV head g.
void prefill_tile(const Shape& sh, const detail::IsaKernels& isa, int32_t s, int64_t t0, int64_t nq, int g, float* lane) {
  const AttentionParams& p = sh.a.p;
  float* scores = lane;
  float* m = lane + p.block_size;
  float* l = m + kQueryTile * sh.group;
  const int64_t head_off = (int64_t)g * p.head_dim;
  const int32_t* table = sh.a.block_tables + (int64_t)s * sh.a.max_blocks_per_seq;
  int64_t kv_end = 0;
  for (int64_t i = 0; i < nq; ++i) kv_end = std::max(kv_end, sh.kv_len(s, t0 + i));
  auto row = [&](int64_t i, int hh) {
    const int64_t t = t0 + i, h = (int64_t)g * sh.group + hh, r = i * sh.group + hh;
    return Row{sh.a.q + t * sh.q_row + h * p.head_dim, sh.a.out + t * sh.q_row + h * p.head_dim, &m[r], &l[r]};
  };
  for (int64_t i = 0; i < nq; ++i)
    for (int hh = 0; hh < sh.group; ++hh) {
      const Row r = row(i, hh);
      *r.m = -INFINITY;
      *r.l = 0.0f;
      std::fill(r.acc, r.acc + p.head_dim, 0.0f);
    }
  for (int64_t j0 = 0; j0 < kv_end; j0 += p.block_size) {
    const int64_t base = (int64_t)table[j0 / p.block_size] * p.block_size;
    for (int64_t i = 0; i < nq; ++i) {
      const int64_t n = std::min<int64_t>(p.block_size, sh.kv_len(s, t0 + i) - j0);
      if (n <= 0) continue;  // causal: this row's context ended in an earlier block
      for (int hh = 0; hh < sh.group; ++hh) fold_block(sh, isa, row(i, hh), base, head_off, n, scores);
    }
  }
  for (int64_t i = 0; i < nq; ++i)
    for (int hh = 0; hh < sh.group; ++hh) {
      const Row r = row(i, hh);
      const float inv = *r.l > 0.0f ? 1.0f / *r.l : 0.0f;
      for (int d = 0; d < p.head_dim; ++d) r.acc[d] *= inv;
    }
}

}  // namespace

size_t attention_workspace_bytes(const AttentionParams& p, const AttentionWorkspaceBounds& b) {
  const int64_t max_decode = std::max<int64_t>(0, std::min(b.n_tokens, b.n_seqs));
  const int64_t group = p.n_heads / std::max(1, p.n_kv_heads);
  const int64_t partials = max_pieces(max_decode * p.n_kv_heads, b.max_context, b.n_threads) * group * partial_floats(p);
  return (size_t)(partials + lane_cap(b.n_threads) * lane_floats(p)) * sizeof(float);
}

int64_t attention_decode_pieces(const AttentionParams& p, int64_t n_decode, int64_t context, int n_threads) {
  return piece_count(context, pieces_target(n_decode * p.n_kv_heads, n_threads), p.block_size);
}

void paged_attention(const AttentionArgs& a, ParallelFor& pf) {
  const AttentionParams& p = a.p;
  const detail::IsaKernels& isa = detail::active_kernels();
  int64_t n_decode = 0;
  for (int32_t s = 0; s < a.n_seqs; ++s) n_decode += a.query_start[s + 1] - a.query_start[s] == 1;
  const int64_t pairs = n_decode * p.n_kv_heads;
  const Shape sh{a,
                 p.n_heads / p.n_kv_heads,
                 (int64_t)p.n_heads * p.head_dim,
                 (int64_t)p.n_kv_heads * p.head_dim,
                 sqrtf((float)p.head_dim),
                 pieces_target(pairs, pf.num_threads())};

  int64_t n_units = 0, n_pieces = 0;
  for (int32_t s = 0; s < a.n_seqs; ++s) {
    n_units += sh.units(s);
    n_pieces += sh.decode_pieces(s) * p.n_heads;
  }
  if (n_units == 0) return;
  float* const partials = static_cast<float*>(a.workspace);
  float* const lanes_base = partials + n_pieces * partial_floats(p);
  const int64_t lanes = std::min(n_units, lane_cap(pf.num_threads()));

  // Pass 1: decode pieces and prefill tiles. Lane c takes units c, c + lanes, ...
  // Units are numbered sequence by sequence, a decode sequence's KV-head-major;
  // its partials are query-head-major (see decode_piece).
  const auto units = [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* lane = lanes_base + c * lane_floats(p);
      int64_t first = 0, piece_base = 0;
      for (int32_t s = 0; s < a.n_seqs; ++s) {
        const int64_t n = sh.units(s);
        const bool decode = sh.q_len(s) == 1;
        for (int64_t u = (c - first % lanes + lanes) % lanes; u < n; u += lanes) {
          if (decode) {
            const int64_t per_kv_head = sh.decode_pieces(s);
            decode_piece(sh, isa, s, (int)(u / per_kv_head), u % per_kv_head, per_kv_head,
                         partials + piece_base * partial_floats(p), lane);
          } else {
            const int64_t tile = u / p.n_kv_heads, t0 = a.query_start[s] + tile * kQueryTile;
            prefill_tile(sh, isa, s, t0, std::min(kQueryTile, a.query_start[s + 1] - t0), (int)(u % p.n_kv_heads), lane);
          }
        }
        first += n;
        piece_base += sh.decode_pieces(s) * p.n_heads;
      }
    }
  };
  detail::parallel_for(pf, lanes, 1, units);
  if (n_decode == 0) return;

  // Pass 2: merge each (decode sequence, head)'s pieces into its output row.
  const auto merges = [&](int64_t i0, int64_t i1) {
    int64_t pair = 0, piece_base = 0;
    for (int32_t s = 0; s < a.n_seqs && pair < i1; ++s) {
      if (sh.q_len(s) != 1) continue;
      const int64_t t = a.query_start[s];
      const int64_t per_head = sh.decode_pieces(s);
      for (int h = 0; h < p.n_heads; ++h, ++pair)
        if (pair >= i0 && pair < i1)
          merge_pieces(p, partials + (piece_base + h * per_head) * partial_floats(p), per_head,
                       a.out + t * sh.q_row + (int64_t)h * p.head_dim);
      piece_base += per_head * p.n_heads;
    }
  };
  detail::parallel_for(pf, n_decode * p.n_heads, 1, merges);
}

}  // namespace tessera::kernels::cpu
