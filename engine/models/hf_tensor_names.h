#pragma once
// Hugging Face checkpoint tensor names → GGUF names (llama.cpp's
// convert_hf_to_gguf.py naming), one table per model_type. A layer tensor
// "model.layers.N.<suffix>" maps by its suffix to "blk.N.<gguf suffix>";
// the rest map whole. Each architecture is the llama table plus its own rows.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tessera {

// What the loader does to a tensor's values on the way, beyond renaming.
enum class HfTransform {
  none,
  add_one,  // Gemma's RMSNorm computes x * (1 + w); GGUF stores 1 + w
};

struct HfTensorRule {
  std::string_view hf;    // suffix after "model.layers.N." for layer tensors, else the whole name
  std::string_view gguf;  // suffix after "blk.N." for layer tensors, else the whole name
  HfTransform transform = HfTransform::none;
};

struct HfArchitecture {
  std::string_view model_type;  // config.json's "model_type"
  std::string_view gguf_arch;   // GGUF's general.architecture
  std::span<const HfTensorRule> layer_rules;
  std::span<const HfTensorRule> global_rules;
};

// The architecture of a config.json model_type; nullptr when there is no table for it.
const HfArchitecture* find_hf_architecture(std::string_view model_type);
// "llama, mistral, qwen2, ..." — every model_type with a table.
std::string hf_architecture_names();

struct HfMappedName {
  std::string gguf;
  HfTransform transform = HfTransform::none;
};
// The GGUF name of an HF tensor; nullopt when the table has no row for it.
std::optional<HfMappedName> map_hf_tensor_name(const HfArchitecture& arch, std::string_view hf_name);
// Tensors checkpoints carry that are not weights (rotary inverse frequencies): skipped.
bool is_ignored_hf_tensor(std::string_view hf_name);

}  // namespace tessera
