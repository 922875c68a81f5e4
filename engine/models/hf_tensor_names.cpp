#include "engine/models/hf_tensor_names.h"

#include <charconv>

namespace tessera {

namespace {
using T = HfTransform;

#define TS_LLAMA_LAYER_ROWS                                                                                      \
  {"self_attn.q_proj.weight", "attn_q.weight"}, {"self_attn.k_proj.weight", "attn_k.weight"},                   \
      {"self_attn.v_proj.weight", "attn_v.weight"}, {"self_attn.o_proj.weight", "attn_output.weight"},          \
      {"mlp.gate_proj.weight", "ffn_gate.weight"}, {"mlp.up_proj.weight", "ffn_up.weight"},                     \
      {"mlp.down_proj.weight", "ffn_down.weight"}, {"input_layernorm.weight", "attn_norm.weight"}

constexpr HfTensorRule kLlamaLayer[] = {TS_LLAMA_LAYER_ROWS,
                                        {"post_attention_layernorm.weight", "ffn_norm.weight"}};
constexpr HfTensorRule kQwen2Layer[] = {TS_LLAMA_LAYER_ROWS,
                                        {"post_attention_layernorm.weight", "ffn_norm.weight"},
                                        {"self_attn.q_proj.bias", "attn_q.bias"},
                                        {"self_attn.k_proj.bias", "attn_k.bias"},
                                        {"self_attn.v_proj.bias", "attn_v.bias"}};
constexpr HfTensorRule kQwen3Layer[] = {TS_LLAMA_LAYER_ROWS,
                                        {"post_attention_layernorm.weight", "ffn_norm.weight"},
                                        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
                                        {"self_attn.k_norm.weight", "attn_k_norm.weight"}};
// Gemma 2 norms around both blocks, each stored as w where the model computes 1 + w.
constexpr HfTensorRule kGemma2Layer[] = {
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"input_layernorm.weight", "attn_norm.weight", T::add_one},
    {"post_attention_layernorm.weight", "post_attention_norm.weight", T::add_one},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight", T::add_one},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight", T::add_one}};
constexpr HfTensorRule kPhi3Layer[] = {{"self_attn.qkv_proj.weight", "attn_qkv.weight"},
                                       {"self_attn.o_proj.weight", "attn_output.weight"},
                                       {"mlp.gate_up_proj.weight", "ffn_up.weight"},
                                       {"mlp.down_proj.weight", "ffn_down.weight"},
                                       {"input_layernorm.weight", "attn_norm.weight"},
                                       {"post_attention_layernorm.weight", "ffn_norm.weight"}};
#undef TS_LLAMA_LAYER_ROWS

constexpr HfTensorRule kLlamaGlobal[] = {{"model.embed_tokens.weight", "token_embd.weight"},
                                         {"model.norm.weight", "output_norm.weight"},
                                         {"lm_head.weight", "output.weight"}};
constexpr HfTensorRule kGemma2Global[] = {{"model.embed_tokens.weight", "token_embd.weight"},
                                          {"model.norm.weight", "output_norm.weight", T::add_one},
                                          {"lm_head.weight", "output.weight"}};

constexpr HfArchitecture kArchitectures[] = {
    {"llama", "llama", kLlamaLayer, kLlamaGlobal},   {"mistral", "llama", kLlamaLayer, kLlamaGlobal},
    {"qwen2", "qwen2", kQwen2Layer, kLlamaGlobal},   {"qwen3", "qwen3", kQwen3Layer, kLlamaGlobal},
    {"gemma2", "gemma2", kGemma2Layer, kGemma2Global}, {"phi3", "phi3", kPhi3Layer, kLlamaGlobal},
};

constexpr std::string_view kLayerPrefix = "model.layers.";
}  // namespace

const HfArchitecture* find_hf_architecture(std::string_view model_type) {
  for (const HfArchitecture& a : kArchitectures)
    if (a.model_type == model_type) return &a;
  return nullptr;
}

std::string hf_architecture_names() {
  std::string s;
  for (const HfArchitecture& a : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(a.model_type);
  return s;
}

std::optional<HfMappedName> map_hf_tensor_name(const HfArchitecture& arch, std::string_view hf_name) {
  if (hf_name.starts_with(kLayerPrefix)) {
    const std::string_view rest = hf_name.substr(kLayerPrefix.size());
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 9) return std::nullopt;
    uint32_t layer = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, layer);
    if (ec != std::errc() || end != rest.data() + dot || (dot > 1 && rest[0] == '0')) return std::nullopt;
    const std::string_view suffix = rest.substr(dot + 1);
    for (const HfTensorRule& r : arch.layer_rules)
      if (r.hf == suffix) return HfMappedName{"blk." + std::to_string(layer) + "." + std::string(r.gguf), r.transform};
    return std::nullopt;
  }
  for (const HfTensorRule& r : arch.global_rules)
    if (r.hf == hf_name) return HfMappedName{std::string(r.gguf), r.transform};
  return std::nullopt;
}

bool is_ignored_hf_tensor(std::string_view hf_name) { return hf_name.ends_with(".rotary_emb.inv_freq"); }

}  // namespace tessera
