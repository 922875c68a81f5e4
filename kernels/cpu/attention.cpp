// Paged attention, one path per sequence (docs/backends.md, "Paged
// attention: one path per sequence"), with one order of arithmetic per
// token whatever path or call computes it (docs/backends.md, "Batch
// invariance"):
//
// * A token's context is cut into pieces of kPiecePositions positions
//   (whole blocks), fixed, never sized from the call. Each piece is an
//   online softmax from scratch over its blocks in order, leaving (max, sum
//   of exponentials, unnormalized sum of V) per head; the pieces are merged
//   left to right (merge_piece) and the sum of V divided by the sum. So a
//   token's bits depend on its query, its context and the block size only:
//   never on the call's threads, its other sequences, or whether the token
//   is a decode or one row of a prefill chunk.
// * A prefill chunk (several query tokens) is tiled: a unit takes up to
//   kQueryTile consecutive query tokens of one sequence and every head of
//   one KV head group, and walks the context block by block, each loaded
//   K/V block serving all of the tile's rows, merging each piece as it ends.
// * A decode sequence (one query token) is a tile of one token, unless the
//   call's decode sequences are fewer than the lanes: then each piece, for
//   every KV head, is a unit of its own, leaving its partial results in the
//   workspace, and a second pass merges the pieces, in the same order. One
//   decode token with a long context thus keeps every thread busy, and a
//   piece reads its blocks whole (every KV head's rows), which lie together
//   in the pool, where one KV head's rows lie a pool row apart.
//
// * A sliding window (AttentionParams::window) skips the blocks wholly
//   before it and masks the positions before it in the block where it
//   starts; a piece with no position left adds nothing when merged, so a
//   token's bits still depend on its query and its window alone. Soft-capped
//   scores (AttentionParams::softcap) are capped right after the scale.
//
// * Every path folds a block through one inner kernel per ISA family
//   (isa_kernels.h, AttentionBlock; attention_block.h, instantiated by the
//   attention_block__<isa>.cpp files): one token, one block, one KV head and
//   the query heads of its group. It scores the block's positions together
//   (q in registers, each K row read once in the pool's dtype, f16/bf16
//   widened in registers), takes the online-softmax step with a vector exp
//   (exp_f32__<isa>.h), and folds the V rows into accumulators held in
//   registers. A decode and a chunk row make the same calls in the same
//   order, so their bits agree on each ISA; widening is exact, so the bits
//   of f16 and bf16 pools are those of f32 pools of the rounded values. A
//   tile's rows after the first find the block in L1. Decode reads half the
//   bytes of f32 pools from memory.
//
// Units are dealt round-robin to lanes; lane c owns the region
// [partials_end + c * lane_floats, + lane_floats) of the workspace (the
// inner kernel's scratch, then the tile rows' softmax states), and the
// lanes run as the ParallelFor's items, so no two threads share a region.
#include <algorithm>
#include <climits>
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa_kernels.h"
#include "kernels/cpu/parallel_util.h"

namespace tessera::kernels::cpu {

namespace {

// Positions per context piece (rounded up to whole blocks). Fixed: a piece
// size chosen per call would make a token's bits depend on the call.
constexpr int64_t kPiecePositions = 128;
// Query tokens per prefill unit: each K/V block loaded serves this many rows
// (times the head group) while it is in L1.
constexpr int64_t kQueryTile = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Work items per thread: a few, so uneven units still balance.
int64_t lane_cap(int n_threads) { return 4 * (int64_t)std::max(1, n_threads); }

int64_t group_of(const AttentionParams& p) { return p.n_heads / std::max(1, p.n_kv_heads); }

// Per lane: the inner kernel's scratch, then per tile row (token x head of
// the group) the merged max and sum, and the current piece's max, sum and
// head_dim accumulators.
int64_t tile_state_offset(const AttentionParams& p) { return detail::attention_block_scratch_floats(p.block_size); }
int64_t lane_floats(const AttentionParams& p) {
  return tile_state_offset(p) + kQueryTile * group_of(p) * (4 + (int64_t)p.head_dim);
}

// Per (decode sequence, query head, piece): max, sum, then head_dim accumulators.
int64_t partial_floats(const AttentionParams& p) { return (int64_t)p.head_dim + 2; }

int64_t piece_span(int32_t block_size) { return ceil_div(kPiecePositions, block_size) * block_size; }

int64_t piece_count(int64_t len, int32_t block_size) {
  return std::max<int64_t>(1, ceil_div(len, piece_span(block_size)));
}

// Whether a call of n_decode decode sequences runs each of their pieces as a
// unit: only when the sequences alone cannot fill the lanes. It decides who
// computes what, never the numbers.
bool split_decodes(int64_t n_decode, int n_threads) { return n_decode < lane_cap(n_threads); }

struct Shape {
  const AttentionArgs& a;
  int group;            // query heads per KV head
  int64_t q_row, kv_row;
  float sqrt_hd;
  float inv_softcap;    // 1 / p.softcap, when it is set
  bool split;           // split_decodes() of the call

  // Bytes of `elems` pool elements from a head's first (whole 32-element blocks for q8_0, fp8_e4m3).
  int64_t kv_bytes(int64_t elems) const { return (int64_t)bytes_for(a.kv_dtype, elems); }

  int64_t q_len(int32_t s) const { return (int64_t)a.query_start[s + 1] - a.query_start[s]; }
  int64_t kv_len(int32_t s, int64_t t) const {
    return a.p.causal ? (int64_t)a.positions[t] + 1 : (int64_t)a.seq_lens[s];
  }
  // The first position token t sees: the start of its sliding window (positions j with positions[t] - j < window).
  int64_t kv_first(int64_t t) const {
    return a.p.window > 0 ? std::max<int64_t>(0, (int64_t)a.positions[t] - a.p.window + 1) : 0;
  }
  // Pieces of sequence s run as units of their own (each for every KV head); 0 for a sequence whose tiles merge as they go.
  int64_t decode_pieces(int32_t s) const {
    return split && q_len(s) == 1 ? piece_count(kv_len(s, a.query_start[s]), a.p.block_size) : 0;
  }
  // Work units of sequence s: pieces, or query tiles times KV heads.
  int64_t units(int32_t s) const {
    const int64_t pieces = decode_pieces(s);
    return pieces > 0 ? pieces : ceil_div(q_len(s), kQueryTile) * a.p.n_kv_heads;
  }
};

// The running softmax state of one query row (one token, one head) over
// some of its positions.
struct Row {
  const float* q;
  float* acc;  // head_dim, unnormalized
  float* m;
  float* l;
};

void reset(const Row& r, int head_dim) {
  *r.m = -INFINITY;
  *r.l = 0.0f;
  std::fill(r.acc, r.acc + head_dim, 0.0f);
}

// The inner kernel's arguments for the block at pool slots base.., offsets
// [lo, n), of KV head g; the caller points q, acc, m and l at the states of
// the group's query heads.
detail::AttentionBlock block_args(const Shape& sh, int64_t base, int g, int64_t lo, int64_t n, float* scratch) {
  const AttentionParams& p = sh.a.p;
  const int64_t first = sh.kv_bytes(base * sh.kv_row + (int64_t)g * p.head_dim);
  detail::AttentionBlock b;
  b.kv_dtype = sh.a.kv_dtype;
  b.k = static_cast<const char*>(sh.a.k_pool) + first;
  b.v = static_cast<const char*>(sh.a.v_pool) + first;
  b.kv_stride = sh.kv_row;
  b.lo = (int32_t)lo;
  b.n = (int32_t)n;
  b.head_dim = p.head_dim;
  b.heads = sh.group;
  b.scale = p.scale;
  b.sqrt_hd = sh.sqrt_hd;
  b.softcap = p.softcap;
  b.inv_softcap = sh.inv_softcap;
  b.scratch = scratch;
  return b;
}

// Asks for the K and V rows of the block at pool slots base.., offsets [lo,
// n), of the KV head at head_off, ahead of their use. A KV head's row is a
// few cache lines of a pool row of every KV head, so a block's rows lie a
// pool row apart (4 KiB for 8 KV heads of 128 f32), and the blocks in table
// order: no hardware prefetcher follows that, and without this each row
// waited for memory. A hint only: it changes no arithmetic.
void prefetch_block(const Shape& sh, int64_t base, int64_t head_off, int64_t lo, int64_t n) {
  const int64_t row_bytes = sh.kv_bytes(sh.a.p.head_dim), stride = sh.kv_bytes(sh.kv_row);
  const char* k = static_cast<const char*>(sh.a.k_pool) + sh.kv_bytes(base * sh.kv_row + head_off);
  const char* v = static_cast<const char*>(sh.a.v_pool) + sh.kv_bytes(base * sh.kv_row + head_off);
  for (int64_t o = lo; o < n; ++o)
    for (int64_t b = 0; b < row_bytes; b += 64) {
      __builtin_prefetch(k + o * stride + b);
      __builtin_prefetch(v + o * stride + b);
    }
}

// Merges the next piece into `into` (the merge of the pieces before it; an
// empty state takes the piece as it is). Every path merges with this, left
// to right, so the order of operations is the token's own.
void merge_piece(const Row& into, const Row& piece, int head_dim) {
  if (!(*piece.l > 0.0f)) return;  // a piece of no positions adds nothing
  if (!(*into.l > 0.0f)) {
    *into.m = *piece.m;
    *into.l = *piece.l;
    std::copy(piece.acc, piece.acc + head_dim, into.acc);
    return;
  }
  const float big = std::max(*into.m, *piece.m);
  const float a = expf(*into.m - big), b = expf(*piece.m - big);
  for (int d = 0; d < head_dim; ++d) into.acc[d] = into.acc[d] * a + piece.acc[d] * b;
  *into.l = *into.l * a + *piece.l * b;
  *into.m = big;
}

// acc / l in place: the attention output (0 for a row that saw no position).
void finish(const Row& r, int head_dim) {
  const float l = *r.l;
  for (int d = 0; d < head_dim; ++d) r.acc[d] = l > 0.0f ? r.acc[d] / l : 0.0f;
}

// Piece `piece` of decode sequence s for every query head; head h's partial
// is at partials + (h * n_pieces + piece) * partial_floats. Each block is
// folded KV head by KV head (its rows of every KV head lie together in the
// pool), each asking for its rows of the next block first.
void decode_piece(const Shape& sh, const detail::IsaKernels& isa, int32_t s, int64_t piece, int64_t n_pieces,
                  float* partials, float* lane) {
  const AttentionParams& p = sh.a.p;
  const int64_t t = sh.a.query_start[s];
  const int64_t len = sh.kv_len(s, t);
  const int64_t span = piece_span(p.block_size);
  const int32_t* table = sh.a.block_tables + (int64_t)s * sh.a.max_blocks_per_seq;
  auto row = [&](int64_t h) {
    float* partial = partials + (h * n_pieces + piece) * partial_floats(p);
    return Row{sh.a.q + t * sh.q_row + h * p.head_dim, partial + 2, &partial[0], &partial[1]};
  };
  for (int64_t h = 0; h < p.n_heads; ++h) reset(row(h), p.head_dim);
  const int64_t end = std::min(len, (piece + 1) * span);
  const int64_t first = sh.kv_first(t);
  // Blocks wholly before the window are skipped (a piece of none adds nothing when merged).
  const int64_t j_begin = std::max(piece * span, first / p.block_size * p.block_size);
  // The kernel calls run block by block, KV head by KV head. A block's rows
  // of every KV head lie together in the pool (block_size pool rows), so
  // call g of a block asks for the g-th share of the next block's bytes, in
  // address order, while it scores: the requests overlap the arithmetic and
  // run along the pool as the hardware's stream prefetcher expects. The
  // piece's first block is asked for here.
  const int64_t block_bytes = sh.kv_bytes((int64_t)p.block_size * sh.kv_row);
  const int64_t share = (block_bytes / p.n_kv_heads + 63) / 64 * 64;
  auto block_at = [&](const void* pool, int64_t j) {
    return static_cast<const char*>(pool) + sh.kv_bytes((int64_t)table[j / p.block_size] * p.block_size * sh.kv_row);
  };
  if (j_begin < end)
    for (int64_t off = 0; off < block_bytes; off += 64) {
      __builtin_prefetch(block_at(sh.a.k_pool, j_begin) + off);
      __builtin_prefetch(block_at(sh.a.v_pool, j_begin) + off);
    }
  for (int64_t j0 = j_begin; j0 < end; j0 += p.block_size) {
    const int64_t base = (int64_t)table[j0 / p.block_size] * p.block_size;
    const int64_t lo = std::max<int64_t>(0, first - j0), n = std::min<int64_t>(p.block_size, end - j0);
    const int64_t next = j0 + p.block_size;
    for (int g = 0; g < p.n_kv_heads; ++g) {
      detail::AttentionBlock b = block_args(sh, base, g, lo, n, lane);
      const Row first_head = row((int64_t)g * sh.group);
      b.q = first_head.q;
      b.q_stride = p.head_dim;
      b.acc = first_head.acc;
      b.m = first_head.m;
      b.l = first_head.l;
      b.acc_stride = b.ml_stride = n_pieces * partial_floats(p);
      if (next < end && g * share < block_bytes) {
        b.ahead_k = block_at(sh.a.k_pool, next) + g * share;
        b.ahead_v = block_at(sh.a.v_pool, next) + g * share;
        b.ahead_bytes = std::min(share, block_bytes - g * share);
      }
      isa.attention_block(b);
    }
  }
}

// The output rows of decode sequence s, head h: its pieces merged in order.
void merge_pieces(const Shape& sh, int32_t s, int h, float* partials, int64_t n_pieces) {
  const AttentionParams& p = sh.a.p;
  const int64_t t = sh.a.query_start[s];
  float m = 0.0f, l = 0.0f;
  const Row out{nullptr, sh.a.out + t * sh.q_row + (int64_t)h * p.head_dim, &m, &l};
  reset(out, p.head_dim);
  for (int64_t i = 0; i < n_pieces; ++i) {
    float* part = partials + i * partial_floats(p);
    merge_piece(out, Row{nullptr, part + 2, &part[0], &part[1]}, p.head_dim);
  }
  finish(out, p.head_dim);
}

// Query tokens [t0, t0 + nq) of sequence s, the heads of KV head g. The
// first piece folds straight into the merged state (merging it into an
// empty state would copy it unchanged); each later one into a piece state
// that is merged when the piece ends.
void query_tile(const Shape& sh, const detail::IsaKernels& isa, int32_t s, int64_t t0, int64_t nq, int g, float* lane) {
  const AttentionParams& p = sh.a.p;
  const int64_t rows = kQueryTile * sh.group;
  float* merged_m = lane + tile_state_offset(p);
  float* merged_l = merged_m + rows;
  float* piece_m = merged_l + rows;
  float* piece_l = piece_m + rows;
  float* piece_acc = piece_l + rows;
  const int32_t* table = sh.a.block_tables + (int64_t)s * sh.a.max_blocks_per_seq;
  int64_t kv_end = 0, kv_begin = INT64_MAX;
  for (int64_t i = 0; i < nq; ++i) {
    kv_end = std::max(kv_end, sh.kv_len(s, t0 + i));
    kv_begin = std::min(kv_begin, sh.kv_first(t0 + i));
  }
  auto merged = [&](int64_t i, int hh) {
    const int64_t t = t0 + i, h = (int64_t)g * sh.group + hh, r = i * sh.group + hh;
    return Row{sh.a.q + t * sh.q_row + h * p.head_dim, sh.a.out + t * sh.q_row + h * p.head_dim, &merged_m[r], &merged_l[r]};
  };
  auto piece = [&](int64_t i, int hh) {
    const int64_t r = i * sh.group + hh;
    return Row{merged(i, hh).q, piece_acc + r * p.head_dim, &piece_m[r], &piece_l[r]};
  };
  for (int64_t i = 0; i < nq; ++i)
    for (int hh = 0; hh < sh.group; ++hh) reset(merged(i, hh), p.head_dim);
  const int64_t span = piece_span(p.block_size);
  // Pieces wholly before every row's window are skipped: they would add
  // nothing. The first piece that runs folds straight into the merged state,
  // which is what merging it into an empty one would give.
  const int64_t p_begin = kv_begin / span * span;
  for (int64_t p0 = p_begin; p0 < kv_end; p0 += span) {
    const bool first = p0 == p_begin;
    if (!first)
      for (int64_t i = 0; i < nq; ++i)
        for (int hh = 0; hh < sh.group; ++hh) reset(piece(i, hh), p.head_dim);
    for (int64_t j0 = std::max(p0, kv_begin / p.block_size * p.block_size); j0 < std::min(kv_end, p0 + span);
         j0 += p.block_size) {
      const int64_t base = (int64_t)table[j0 / p.block_size] * p.block_size;
      if (const int64_t next = j0 + p.block_size; next < kv_end)
        prefetch_block(sh, (int64_t)table[next / p.block_size] * p.block_size, (int64_t)g * p.head_dim, 0,
                       std::min<int64_t>(p.block_size, kv_end - next));
      // Each row folds the block with the decode's kernel call; the rows
      // after the first read the block from L1.
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t n = std::min<int64_t>(p.block_size, sh.kv_len(s, t0 + i) - j0);
        const int64_t lo = std::max<int64_t>(0, sh.kv_first(t0 + i) - j0);
        if (n <= lo) continue;  // causal: this row's context ended in an earlier block; or its window starts later
        detail::AttentionBlock b = block_args(sh, base, g, lo, n, lane);
        const Row first_head = first ? merged(i, 0) : piece(i, 0);
        b.q = first_head.q;
        b.q_stride = p.head_dim;
        b.acc = first_head.acc;
        b.acc_stride = p.head_dim;
        b.m = first_head.m;
        b.l = first_head.l;
        b.ml_stride = 1;
        isa.attention_block(b);
      }
    }
    if (!first)
      for (int64_t i = 0; i < nq; ++i)
        for (int hh = 0; hh < sh.group; ++hh) merge_piece(merged(i, hh), piece(i, hh), p.head_dim);
  }
  for (int64_t i = 0; i < nq; ++i)
    for (int hh = 0; hh < sh.group; ++hh) finish(merged(i, hh), p.head_dim);
}

}  // namespace

size_t attention_workspace_bytes(const AttentionParams& p, const AttentionWorkspaceBounds& b) {
  const int64_t max_decode = std::max<int64_t>(0, std::min(b.n_tokens, b.n_seqs));
  // Partials exist only when decodes split, that is for fewer decode sequences than lanes.
  const int64_t split_seqs = std::min(max_decode, lane_cap(b.n_threads) - 1);
  const int64_t partials = split_seqs * piece_count(b.max_context, p.block_size) * p.n_heads * partial_floats(p);
  return (size_t)(partials + lane_cap(b.n_threads) * lane_floats(p)) * sizeof(float);
}

int64_t attention_decode_pieces(const AttentionParams& p, int64_t n_decode, int64_t context, int n_threads) {
  return split_decodes(n_decode, n_threads) ? piece_count(context, p.block_size) : 1;
}

void attention_exp(const float* x, float* y, int64_t n) { detail::active_kernels().attention_exp(x, y, n); }

void paged_attention(const AttentionArgs& a, ParallelFor& pf) {
  const AttentionParams& p = a.p;
  const detail::IsaKernels& isa = detail::active_kernels();
  int64_t n_decode = 0;
  for (int32_t s = 0; s < a.n_seqs; ++s) n_decode += a.query_start[s + 1] - a.query_start[s] == 1;
  const Shape sh{a,
                 p.n_heads / p.n_kv_heads,
                 (int64_t)p.n_heads * p.head_dim,
                 (int64_t)p.n_kv_heads * p.head_dim,
                 sqrtf((float)p.head_dim),
                 p.softcap > 0.0f ? 1.0f / p.softcap : 0.0f,
                 split_decodes(n_decode, pf.num_threads())};

  int64_t n_units = 0, n_pieces = 0;
  for (int32_t s = 0; s < a.n_seqs; ++s) {
    n_units += sh.units(s);
    n_pieces += sh.decode_pieces(s) * p.n_heads;
  }
  if (n_units == 0) return;
  float* const partials = static_cast<float*>(a.workspace);
  float* const lanes_base = partials + n_pieces * partial_floats(p);
  const int64_t lanes = std::min(n_units, lane_cap(pf.num_threads()));

  // Pass 1: decode pieces and query tiles. Lane c takes units c, c + lanes, ...
  // Units are numbered sequence by sequence, a split decode sequence's
  // one per piece; its partials are query-head-major (see decode_piece).
  const auto units = [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* lane = lanes_base + c * lane_floats(p);
      int64_t first = 0, piece_base = 0;
      for (int32_t s = 0; s < a.n_seqs; ++s) {
        const int64_t n = sh.units(s);
        const int64_t seq_pieces = sh.decode_pieces(s);
        for (int64_t u = (c - first % lanes + lanes) % lanes; u < n; u += lanes) {
          if (seq_pieces > 0) {
            decode_piece(sh, isa, s, u, seq_pieces, partials + piece_base * partial_floats(p), lane);
          } else {
            const int64_t tile = u / p.n_kv_heads, t0 = a.query_start[s] + tile * kQueryTile;
            query_tile(sh, isa, s, t0, std::min(kQueryTile, a.query_start[s + 1] - t0), (int)(u % p.n_kv_heads), lane);
          }
        }
        first += n;
        piece_base += seq_pieces * p.n_heads;
      }
    }
  };
  detail::parallel_for(pf, lanes, 1, units);
  if (n_pieces == 0) return;

  // Pass 2: merge each split (decode sequence, head)'s pieces into its output row.
  const auto merges = [&](int64_t i0, int64_t i1) {
    int64_t pair = 0, piece_base = 0;
    for (int32_t s = 0; s < a.n_seqs && pair < i1; ++s) {
      const int64_t per_head = sh.decode_pieces(s);
      if (per_head == 0) continue;
      for (int h = 0; h < p.n_heads; ++h, ++pair)
        if (pair >= i0 && pair < i1)
          merge_pieces(sh, s, h, partials + (piece_base + h * per_head) * partial_floats(p), per_head);
      piece_base += per_head * p.n_heads;
    }
  };
  detail::parallel_for(pf, n_decode * p.n_heads, 1, merges);
}

}  // namespace tessera::kernels::cpu
