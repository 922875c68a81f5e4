#pragma once
// The hyper-parameters of every architecture Tessera builds (llama, qwen2,
// qwen3, gemma2, phi3), however the file spelled them. One struct: the
// architectures differ in a few switches (biases, norms, gating, caps,
// windows), and the graph builder (engine/runtime/model_graph.cpp) reads
// those switches, never the architecture's name.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ops.h"
#include "core/status.h"

namespace tessera {

enum class Arch : uint8_t { llama, qwen2, qwen3, gemma2, phi3 };
inline constexpr int kArchCount = 5;
std::string_view name(Arch a);                          // as general.architecture spells it
std::optional<Arch> arch_from_name(std::string_view n);
std::string supported_architectures();                  // "llama, qwen2, qwen3, gemma2, phi3"

// The FFN's gating: silu(gate) * up (SwiGLU) or gelu_tanh(gate) * up (GeGLU).
enum class FfnActivation : uint8_t { silu, gelu };

struct TransformerConfig {
  // The first fields in llama2.c's order (code writes them as one brace list).
  int32_t dim = 0;          // {arch}.embedding_length
  int32_t hidden_dim = 0;   // {arch}.feed_forward_length
  int32_t n_layers = 0;     // {arch}.block_count
  int32_t n_heads = 0;      // {arch}.attention.head_count
  int32_t n_kv_heads = 0;   // {arch}.attention.head_count_kv
  int32_t vocab_size = 0;
  int32_t context_length = 0;  // {arch}.context_length (llama2.c: seq_len)
  int32_t rope_dims = 0;       // {arch}.rope.dimension_count; head_dim when absent
  float rope_theta = 10000.0f; // {arch}.rope.freq_base
  float rms_eps = 1e-5f;       // {arch}.attention.layer_norm_rms_epsilon
  RopeLayout rope_layout = RopeLayout::interleaved;
  bool tied_embeddings = false;  // no output.weight: the classifier is token_embd

  Arch arch = Arch::llama;

  // {arch}.attention.key_length: the head size when it is not dim / n_heads
  // (qwen3, gemma2); 0 = dim / n_heads.
  int32_t key_length = 0;
  // RoPE frequency scaling: positions times freq_scale (linear scaling,
  // 1 / {arch}.rope.scaling.factor), and each pair's frequency divided by
  // rope_freqs.weight[i] when the file has it (llama3's scaling, as
  // llama.cpp's converter bakes it).
  float rope_freq_scale = 1.0f;
  bool rope_freq_factors = false;
  // {arch}.rope.scaling.original_context_length as the file states it (0:
  // not stated). The graph does not read it; writers keep it (phi3's
  // converter writes it).
  int32_t rope_original_context = 0;
  // Sliding-window attention: a query at position p sees positions j with
  // p - j < sliding_window (0 = no window) on the layers l with
  // l % sliding_window_pattern < sliding_window_pattern - 1 (llama.cpp's
  // rule: gemma2's pattern 2 windows the even layers); pattern 1 windows
  // every layer (Mistral).
  int32_t sliding_window = 0;
  int32_t sliding_window_pattern = 1;
  // A window the file states that llama.cpp does not apply (phi3's
  // {arch}.attention.sliding_window: its Phi SWA is disabled), kept for
  // writers; the graph does not read it.
  int32_t unapplied_sliding_window = 0;
  float attn_logit_softcap = 0.0f;   // scores = cap * tanh(scores / cap); 0 = none
  float final_logit_softcap = 0.0f;  // the same on the logits
  float attention_scale = 0.0f;      // the scores' scale; 0 = 1 / sqrt(head_dim)
  float embedding_scale = 0.0f;      // the embeddings times this (gemma2: sqrt(dim)); 0 = none
  FfnActivation ffn_activation = FfnActivation::silu;
  bool qkv_bias = false;       // blk.N.attn_{q,k,v}.bias (qwen2)
  bool qk_norm = false;        // blk.N.attn_{q,k}_norm.weight [head_dim]: RMSNorm of each head before RoPE (qwen3)
  bool post_norms = false;     // blk.N.post_attention_norm / post_ffw_norm on each block's output (gemma2)
  bool fused_qkv = false;      // blk.N.attn_qkv.weight: Q rows, then K, then V (phi3)
  bool fused_gate_up = false;  // blk.N.ffn_up.weight of 2 * hidden_dim rows: gate, then up (phi3)

  int32_t head_dim() const { return key_length ? key_length : n_heads ? dim / n_heads : 0; }
  int32_t q_dim() const { return head_dim() * n_heads; }
  int32_t kv_dim() const { return head_dim() * n_kv_heads; }
  // The window of layer l: sliding_window where the pattern puts one, else 0.
  int32_t layer_window(int32_t l) const;
  // Checks the relations the graph relies on; `source` names the file.
  Status validate(const std::string& source) const;
};

// The first field in which two configs differ, as "field A vs B"; empty when
// they agree on every field.
std::string first_difference(const TransformerConfig& a, const TransformerConfig& b);

// llama3's RoPE scaling (rope_type "llama3"), as Meta defines it.
struct Llama3RopeScaling {
  float factor = 8.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int32_t original_context = 8192;
};
// Per RoPE pair, the divisor of its frequency: what llama.cpp's converter
// bakes into rope_freqs.weight [rope_dims / 2].
std::vector<float> llama3_rope_freq_factors(const TransformerConfig& c, const Llama3RopeScaling& s);

}  // namespace tessera
