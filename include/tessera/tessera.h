#pragma once
// Tessera's public C++ API: open a model on a device, create a generation
// session, feed tokens, sample, read metrics. The `tessera` CLI is a thin
// client of exactly this header.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/hal/device_info.h"
#include "core/status.h"
#include "engine/models/llama_config.h"
#include "engine/runtime/metrics.h"
#include "engine/sampling/sampler.h"

namespace tessera {

class KvCache;
class ModelRunner;
class Session;
class Tokenizer;
struct ModelWeights;

struct ModelOptions {
  std::string path;            // GGUF or llama2.c .bin
  std::string tokenizer_path;  // Hugging Face tokenizer.json or llama2.c tokenizer.bin; empty: the model file's own
  std::string backend = "cpu";
  int device = 0;
  int32_t max_context = 0;     // 0: the model's context length, capped at 4096
  int32_t max_prefill_tokens = 256;
  uint64_t kv_cache_bytes = 0;  // K/V pools over every layer; 0: one whole context (docs/architecture.md, KvCache)
  bool strict = false;         // refuse rather than run nodes the backend lacks on the CPU
  std::string passes = "default";  // graph passes: "default", "none", "default,-fuse_qkv", ... (docs/ir.md)
  std::string tile;                // tile overrides: "matmul.chunk_bytes=32768,..." (docs/ir.md)
  std::string place;               // nodes pinned to a device: "paged_attention=cpu,..." (docs/ir.md)
  std::string weight_layout = "auto";  // matmul weights' block order: auto (the target's preference), rows, rows_x4
};

class Model;

// A generation session over one sequence of a Model.
class Generation {
 public:
  ~Generation();
  Status feed(std::span<const int32_t> tokens);   // the prompt, or the next token
  std::span<const float> logits() const;           // after the last token fed
  int32_t sample();                                // from logits(), with the session's sampler
  int32_t position() const;
  // llama2.c's loop: -n forward passes including the prompt; returns every id.
  Expected<std::vector<int32_t>> generate(std::span<const int32_t> prompt, int32_t steps,
                                          const std::function<bool(int32_t)>& on_token = {});
  const GenerationMetrics& metrics() const { return metrics_; }

 private:
  friend class Model;
  Generation(std::unique_ptr<Session> s, SamplerParams p);
  std::unique_ptr<Session> session_;
  Sampler sampler_;
  SamplerParams params_;
  GenerationMetrics metrics_;
  std::vector<float> scratch_;
};

class Model {
 public:
  static Expected<std::unique_ptr<Model>> open(const ModelOptions& options);
  ~Model();

  const LlamaConfig& config() const;
  const DeviceInfo& device() const;
  int32_t max_context() const;  // positions a session can hold
  // Nodes the asked-for backend could not run, one line each, when the model
  // runs on the CPU instead; empty when it runs where asked.
  const std::vector<std::string>& placement_notes() const;
  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  // The text as the model's tokenizer splits it, with BOS (and EOS) where the
  // vocabulary asks for them (llama2.c and SentencePiece vocabularies: BOS).
  // Text spelling a special token is plain text.
  Expected<std::vector<int32_t>> encode(const std::string& text) const;
  // The text of ids[1..] as llama2.c prints it.
  Expected<std::string> decode(const std::vector<int32_t>& ids) const;
  std::string decode_piece(int32_t prev, int32_t id) const;

  Expected<std::unique_ptr<Generation>> start(const SamplerParams& sampler = {});
  ModelRunner& runner() { return *runner_; }
  KvCache& kv_cache() { return *kv_; }

 private:
  Model() = default;
  std::shared_ptr<const ModelWeights> weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<KvCache> kv_;  // after the runner: its pools are the runner's devices' memory
};

// Every backend and device this process can see.
struct BackendReport {
  std::string backend;
  std::vector<DeviceInfo> devices;
  std::string why_none;  // when devices is empty
};
std::vector<BackendReport> list_devices();
// Bytes of memory free now on device `index` of `backend` (it opens the
// device to ask; docs/backends.md says how each backend measures).
Expected<uint64_t> free_device_memory(const std::string& backend, int index);
std::vector<std::string> backend_load_errors();

}  // namespace tessera
