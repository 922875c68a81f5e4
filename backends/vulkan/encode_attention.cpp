// Paged attention, one path per sequence: a sequence with one query token
// (decode) has its context split over workgroups and merged
// (attention_split + attention_merge); a sequence with several (a prefill
// chunk) runs the tiled attention_prefill. A bucket that can hold both kinds
// records both, each kernel skipping the other kind's sequences at run time
// (the step's query_start decides). Buckets of one token record only the
// split path, and so does a head_dim beyond the prefill kernel's limit, the
// split kernels then serving every token. So does tile.batch_invariant: the
// prefill kernel's online softmax over 16-position tiles sums in another
// order than the split kernels' 128-position partitions, and a token must
// get the same bits as a decode and as a row of a prompt chunk
// (docs/backends.md, "Batch invariance").
#include <algorithm>
#include <cmath>
#include <variant>

#include "backends/vulkan/encode.h"

namespace tessera::vulkan {

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// kernels/vulkan/attention_split.comp SPLIT and HD_MAX; attention_prefill.comp BQ and HD_MAX.
constexpr uint64_t kSplitPositions = 128;
constexpr int32_t kSplitMaxHeadDim = 256;
constexpr uint64_t kPrefillQueryTile = 16;
constexpr int32_t kPrefillMaxHeadDim = 128;

}  // namespace

Status encode_attention(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out) {
  const auto& p = std::get<AttentionParams>(d.params);
  if (p.n_heads < 1 || p.n_kv_heads < 1 || p.n_heads % p.n_kv_heads || p.block_size < 1 || p.head_dim < 1)
    return invalid_argument("paged_attention: heads, kv heads, head_dim and block size must be positive, heads a multiple of kv heads");
  if (p.window < 0 || !(p.softcap >= 0.0f)) return invalid_argument("paged_attention: window and softcap must be >= 0");
  if (p.head_dim > kSplitMaxHeadDim)
    return unsupported("paged_attention: head_dim " + std::to_string(p.head_dim) + " exceeds the shaders' " +
                       std::to_string(kSplitMaxHeadDim));
  const PlanTensor& q = d.inputs[0];
  const PlanTensor& y = d.outputs[0];
  const uint64_t tokens = (uint64_t)y.desc.shape[0];
  const ShapeBucket& bucket = ctx.plan().bucket;
  const uint64_t max_len = (uint64_t)bucket.max_blocks_per_seq * (uint64_t)p.block_size;
  const uint64_t slots = (uint64_t)std::min(d.inputs[1].desc.shape[0], d.inputs[2].desc.shape[0]);
  const float scale = p.scale != 0.0f ? p.scale : 1.0f / std::sqrt((float)p.head_dim);
  const uint64_t n_splits = std::max<uint64_t>(ceil_div(max_len, kSplitPositions), 1);
  // Rows of split partials: every token when the split kernels serve them
  // all, else the step's decode sequences, of which there are at most
  // min(max_seqs, max_tokens) (each holds one of the tokens).
  const bool split_all_tokens = tokens == 1 || p.head_dim > kPrefillMaxHeadDim || d.tile.batch_invariant != 0;
  const uint64_t split_rows = split_all_tokens ? tokens : std::min<uint64_t>(tokens, (uint64_t)bucket.max_seqs);
  const std::vector<uint32_t> push = {(uint32_t)p.n_heads,   (uint32_t)p.n_kv_heads,      (uint32_t)p.head_dim,
                                      (uint32_t)p.block_size, float_bits(scale),          p.causal ? 1u : 0u,
                                      (uint32_t)bucket.max_blocks_per_seq, (uint32_t)slots, (uint32_t)n_splits,
                                      split_all_tokens ? 1u : 0u, (uint32_t)p.window, float_bits(p.softcap),
                                      kv_type_code(d.inputs[1].desc.dtype)};
  std::vector<TensorBinding> meta;
  for (size_t i = 3; i < 7; ++i) meta.push_back(ctx.bind(d.inputs[i], false));
  const TensorBinding qb = ctx.bind(q, false), kb = ctx.bind(d.inputs[1], false), vb = ctx.bind(d.inputs[2], false);
  // kv_pool.glsl addresses an 8-bit pool's elements from its offset in whole 34-byte blocks.
  const DType kv = d.inputs[1].desc.dtype;
  if ((kv == DType::q8_0 || kv == DType::fp8_e4m3) && (kb.offset % 34 != 0 || vb.offset % 34 != 0))
    return unsupported("paged_attention: a " + std::string(name(kv)) + " KV pool bound at a byte offset that is not a whole number of 34-byte blocks");
  const TensorBinding yb = ctx.bind(y, true);
  const auto& limits = ctx.device().limits();

  if (n_splits > limits.maxComputeWorkGroupCount[0] || split_rows > limits.maxComputeWorkGroupCount[2])
    return unsupported("paged_attention: " + std::to_string(max_len) + " positions exceed the device's workgroup counts");
  TS_ASSIGN_OR_RETURN(TensorBinding partials,
                      ctx.scratch(split_rows * (uint64_t)p.n_heads * n_splits * ((uint64_t)p.head_dim + 2) * sizeof(float)));
  partials.written = true;
  EncodedDispatch split;
  split.shader = "attention_split";
  split.bindings = {qb, kb, vb, meta[0], meta[1], meta[2], meta[3], partials};
  split.push = push;
  split.groups[0] = (uint32_t)n_splits;
  split.groups[1] = (uint32_t)p.n_heads;
  split.groups[2] = (uint32_t)split_rows;
  out.push_back(std::move(split));

  partials.written = false;
  EncodedDispatch merge;
  merge.shader = "attention_merge";
  merge.bindings = {partials, yb, TensorBinding{}, meta[0], meta[1], meta[2], meta[3]};
  merge.push = push;
  merge.groups[0] = (uint32_t)p.n_heads;
  merge.groups[1] = (uint32_t)split_rows;
  out.push_back(std::move(merge));
  if (split_all_tokens) return Status::ok();

  EncodedDispatch e;
  e.shader = "attention_prefill";
  e.bindings = {qb, kb, vb, meta[0], meta[1], meta[2], meta[3], yb};
  e.push = push;
  e.groups[0] = (uint32_t)ceil_div(tokens, kPrefillQueryTile);
  e.groups[1] = (uint32_t)p.n_heads;
  e.groups[2] = (uint32_t)bucket.max_seqs;
  out.push_back(std::move(e));
  return Status::ok();
}

}  // namespace tessera::vulkan
