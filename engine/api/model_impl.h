#pragma once
// What a public Model and Generation hold. Only the library and its own
// tests include this; programs see the opaque Impl of tessera/tessera.h.
#include <memory>
#include <vector>

#include "engine/models/model_weights.h"
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
ModelConfig to_model_config(const LlamaConfig& c);

// What Model::open and Engine::open share: the weights, and the tokenizer
// (-z, else the model file's own; null when neither has one), checked
// against each other; the runner's options; a prompt's ids.
struct LoadedModel {
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
};
Expected<LoadedModel> load_model_and_tokenizer(const ModelOptions& o);
RunnerOptions runner_options(const ModelOptions& o);
Expected<std::vector<int32_t>> encode_prompt(const Tokenizer* tok, const std::string& source, const std::string& text);
Expected<std::string> decode_ids(const Tokenizer* tok, const std::string& source, const std::vector<int32_t>& ids);

}  // namespace tessera
