#include "engine/models/hf_loader.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/half.h"
#include "core/quant.h"
#include "engine/formats/safetensors.h"
#include "engine/models/hf_config.h"
#include "engine/models/model_tensors.h"
#include "engine/tokenizer/tokenizer_json.h"

namespace tessera {

namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

// What the tensor spans point into: the shards' mappings and the tensors made at load.
struct HfStorage {
  std::vector<std::shared_ptr<const MappedFile>> shards;
  std::vector<std::unique_ptr<std::byte[]>> made;
};

std::string file_path(const std::string& dir, const char* name) { return (fs::path(dir) / name).string(); }

Expected<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path + ": cannot be opened");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The shard files of model.safetensors.index.json, each with the tensors it should hold.
Expected<std::map<std::string, std::set<std::string>>> read_shard_index(const std::string& path) {
  TS_ASSIGN_OR_RETURN(const std::string text, read_text(path));
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return invalid_argument(path + ": is not a JSON object with a 'weight_map' object; expected {\"weight_map\": {tensor: file}}");
  std::map<std::string, std::set<std::string>> shards;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string())
      return invalid_argument(path + ": weight_map entry '" + tensor + "' is " + file.dump() + "; expected a file name");
    const std::string name = file.get<std::string>();
    // Shards sit beside the index: a path elsewhere is refused rather than followed.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      return invalid_argument(path + ": weight_map entry '" + tensor + "' names '" + name +
                              "'; expected a file name in the same folder");
    shards[name].insert(tensor);
  }
  if (shards.empty()) return invalid_argument(path + ": 'weight_map' is empty; expected at least one tensor");
  return shards;
}

// Every shard, opened and checked to hold the tensors the index lists for it.
Expected<std::vector<SafetensorsFile>> open_weights(const std::string& dir) {
  std::vector<SafetensorsFile> files;
  const std::string index = file_path(dir, "model.safetensors.index.json");
  if (fs::exists(index)) {
    TS_ASSIGN_OR_RETURN(const auto shards, read_shard_index(index));
    for (const auto& [name, tensors] : shards) {
      TS_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open((fs::path(dir) / name).string()));
      for (const std::string& t : tensors)
        if (!f.find(t)) return not_found(f.path() + ": tensor '" + t + "' is missing; " + index + " places it here");
      files.push_back(std::move(f));
    }
    return files;
  }
  const std::string single = file_path(dir, "model.safetensors");
  if (!fs::exists(single))
    return not_found(dir + ": has neither model.safetensors nor model.safetensors.index.json; expected the weights in safetensors");
  TS_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(single));
  files.push_back(std::move(f));
  return files;
}

// The tensor's values as f32, `transform` applied: for tensors the loader reshapes.
std::unique_ptr<std::byte[]> widen_to_f32(DType from, std::span<const std::byte> src, int64_t n, HfTransform transform) {
  auto out = std::make_unique<std::byte[]>((size_t)n * sizeof(float));
  float* f = reinterpret_cast<float*>(out.get());
  if (from == DType::f32) {
    std::memcpy(f, src.data(), (size_t)n * sizeof(float));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, src.data() + i * 2, 2);
      f[i] = from == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  }
  // Gemma's 1 + w in f32, as transformers computes it (llama.cpp's converter adds in the checkpoint's dtype).
  if (transform == HfTransform::add_one)
    for (int64_t i = 0; i < n; ++i) f[i] += 1.0f;
  return out;
}

Status add_tensors(const std::vector<SafetensorsFile>& files, const HfConfig& cfg, ModelWeights* m, HfStorage* store) {
  std::map<std::string, std::string> seen;  // GGUF name → the HF tensor it came from
  for (const SafetensorsFile& f : files) {
    for (const SafetensorsTensor& t : f.tensors()) {
      if (is_ignored_hf_tensor(t.name)) continue;
      const auto mapped = map_hf_tensor_name(*cfg.arch, t.name);
      if (!mapped)
        return unsupported(f.path() + ": tensor '" + t.name + "' has no GGUF name for model_type '" +
                           std::string(cfg.arch->model_type) + "'");
      // A tied checkpoint may still carry lm_head: the embedding is the classifier.
      if (cfg.config.tied_embeddings && mapped->gguf == "output.weight") continue;
      const auto [it, fresh] = seen.emplace(mapped->gguf, t.name);
      if (!fresh)
        return invalid_argument(f.path() + ": tensor '" + t.name + "' maps to '" + mapped->gguf + "', as '" +
                                it->second + "' did; expected one tensor per name");
      TS_ASSIGN_OR_RETURN(const DType dtype, safetensors_dtype(t, f.path()));
      if (t.shape.empty() || t.shape.size() > (size_t)kMaxRank)
        return invalid_argument(f.path() + ": tensor '" + t.name + "' has " + std::to_string(t.shape.size()) +
                                " dimensions; expected 1.." + std::to_string(kMaxRank));
      Shape shape;
      shape.rank = (int)t.shape.size();
      for (size_t d = 0; d < t.shape.size(); ++d) shape[(int)d] = t.shape[d];
      const TensorDesc desc = TensorDesc::contiguous(dtype, shape);
      const bool misaligned = reinterpret_cast<uintptr_t>(t.data.data()) % traits(dtype).block_bytes != 0;
      if (shape.rank == 1 || mapped->transform != HfTransform::none || misaligned) {
        // Norms and biases in f32 as GGUF keeps them; a misaligned tensor copied so that loads are aligned.
        const int64_t n = shape.numel();
        store->made.push_back(widen_to_f32(dtype, t.data, n, mapped->transform));
        const TensorDesc wide = TensorDesc::contiguous(DType::f32, shape);
        m->tensors.push_back({mapped->gguf, wide, {store->made.back().get(), (size_t)n * sizeof(float)}});
      } else {
        m->tensors.push_back({mapped->gguf, desc, t.data});
      }
    }
  }
  return Status::ok();
}

// tokenizer_config.json's chat_template (a string, or the "default" of a named list), else chat_template.jinja.
Expected<std::string> read_chat_template(const std::string& dir) {
  const std::string config = file_path(dir, "tokenizer_config.json");
  if (fs::exists(config)) {
    TS_ASSIGN_OR_RETURN(const std::string text, read_text(config));
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return invalid_argument(config + ": is not a JSON object");
    if (j.contains("chat_template")) {
      const json& t = j["chat_template"];
      if (t.is_string()) return t.get<std::string>();
      if (t.is_array())
        for (const auto& e : t)
          if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
            return e["template"].get<std::string>();
      if (!t.is_null())
        return invalid_argument(config + ": key 'chat_template' is neither a string nor a list with a \"default\" entry");
    }
  }
  const std::string jinja = file_path(dir, "chat_template.jinja");
  if (fs::exists(jinja)) return read_text(jinja);
  return std::string();
}

// tokenizer.json, its vocabulary padded to vocab_size as llama.cpp's converter pads it.
Status read_tokenizer(const std::string& dir, ModelWeights* m) {
  const std::string path = file_path(dir, "tokenizer.json");
  if (!fs::exists(path)) return Status::ok();
  TS_ASSIGN_OR_RETURN(TokenizerData t, read_hf_tokenizer_json(path));
  const size_t vocab = (size_t)m->config.vocab_size;
  if (t.tokens.size() > vocab)
    return invalid_argument(path + ": has " + std::to_string(t.tokens.size()) + " tokens; config.json's vocab_size is " +
                            std::to_string(vocab));
  for (size_t id = t.tokens.size(); id < vocab; ++id) {
    t.tokens.push_back("[PAD" + std::to_string(id) + "]");
    t.types.push_back(TokenType::unused);
    if (!t.scores.empty()) t.scores.push_back(0.0f);
  }
  m->tokenizer = std::move(t);
  TS_ASSIGN_OR_RETURN(m->chat_template, read_chat_template(dir));
  return Status::ok();
}
}  // namespace

Expected<ModelWeights> load_hf_model(const std::string& dir) {
  const std::string config_path = file_path(dir, "config.json");
  if (!fs::exists(config_path))
    return not_found(dir + ": has no config.json; expected a Hugging Face model folder (config.json, *.safetensors)");
  TS_ASSIGN_OR_RETURN(HfConfig cfg, read_hf_config(config_path));
  TS_ASSIGN_OR_RETURN(std::vector<SafetensorsFile> files, open_weights(dir));

  ModelWeights m;
  m.source = dir;
  m.format = "hf";
  m.config = cfg.config;
  auto store = std::make_shared<HfStorage>();
  for (const SafetensorsFile& f : files) store->shards.push_back(f.mapping());
  TS_TRY(add_tensors(files, cfg, &m, store.get()));
  if (!cfg.rope_freq_factors.empty()) {
    // llama3 RoPE scaling: the tensor llama.cpp's converter writes, made from config.json.
    const size_t n = cfg.rope_freq_factors.size();
    store->made.push_back(std::make_unique<std::byte[]>(n * sizeof(float)));
    std::memcpy(store->made.back().get(), cfg.rope_freq_factors.data(), n * sizeof(float));
    m.tensors.push_back({"rope_freqs.weight", TensorDesc::contiguous(DType::f32, Shape{(int64_t)n}),
                         {store->made.back().get(), n * sizeof(float)}});
  }
  TS_TRY(check_model_tensors(m));
  TS_TRY(read_tokenizer(dir, &m));
  m.metadata["hf.model_type"] = std::string(cfg.arch->model_type);
  for (size_t i = 0; i < cfg.notes.size(); ++i) m.metadata["hf.note." + std::to_string(i)] = cfg.notes[i];
  m.mappings = store->shards;
  m.storage = std::move(store);
  return m;
}

}  // namespace tessera
