#pragma once
// What a public Model and Generation hold. Only the library and its own
// tests include this; programs see the opaque Impl of tessera/tessera.h.
#include <memory>
#include <vector>

#include "engine/models/model_weights.h"
#include "engine/spec/spec_config.h"
#include "tessera/engine.h"
#include "engine/runtime/model_runner.h"
#include "engine/runtime/session.h"
#include "engine/sampling/sampler.h"
#include "engine/tokenizer/tokenizer.h"
#include "tessera/tessera.h"

namespace tessera {

struct Model::Impl {
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<KvCache> kv;  // after the runner: its pools are the runner's devices' memory
  ModelConfig config;  // weights->config as the public type
  std::string chat_template;
  ~Impl();
};

struct Generation::Impl {
  std::unique_ptr<Session> session;
  Sampler sampler;
  SamplerParams params;
  GenerationMetrics metrics;
  std::vector<float> scratch;
};

// The public ModelConfig of a llama file's hyper-parameters.
ModelConfig to_model_config(const TransformerConfig& c);

// What Model::open and Engine::open share: the weights, and the tokenizer
// (-z, else the model file's own; null when neither has one), checked
// against each other; the runner's options; a prompt's ids.
struct LoadedModel {
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
  // The GGUF's tokenizer.chat_template, or with -z tokenizer.json the
  // chat_template of the tokenizer_config.json beside it; empty when none.
  std::string chat_template;
};
// The chat_template field of the tokenizer_config.json in the directory of
// `tokenizer_path` (a string, or the "default" entry of a list of named
// templates); empty when there is no such file or field.
std::string chat_template_beside(const std::string& tokenizer_path);
// Loads the file (or synthetic model) and its tokenizer.
// A model file or folder, or the synthetic model synthetic_model_type names.
Expected<ModelWeights> open_weights(const std::string& path);
Expected<LoadedModel> load_model_and_tokenizer(const ModelOptions& o);
// The engine's speculative config from the public options: the method's
// name checked, the draft model opened (errors name --draft-model).
Expected<SpecConfig> spec_config_from(const EngineOptions::Speculative& s);
RunnerOptions runner_options(const ModelOptions& o);
// Model::open with these runner options (the tests give a tensor-parallel group of threads).
Expected<std::unique_ptr<Model>> open_model(const ModelOptions& o, const RunnerOptions& ro);
// A follower rank of a tensor-parallel group (include/tessera's follow_rank0
// over the MPI world): each runner the leader opens, and its steps, until the leader leaves.
Status follow_leader(const ResolvedGroup& g);
Expected<std::vector<int32_t>> encode_prompt(const Tokenizer* tok, const std::string& source, const std::string& text);
Expected<std::string> decode_ids(const Tokenizer* tok, const std::string& source, const std::vector<int32_t>& ids);

}  // namespace tessera
