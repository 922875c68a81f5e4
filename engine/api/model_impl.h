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

}  // namespace tessera
