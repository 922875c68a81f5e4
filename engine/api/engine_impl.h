#pragma once
// What the public Engine and RequestHandle hold, for the files of the
// public API that reach past them (engine_api.cpp, disagg_api.cpp).
#include <memory>

#include "engine/api/model_impl.h"
#include "engine/serving/serving_engine.h"
#include "tessera/engine.h"

namespace tessera {

struct RequestHandle::Impl {
  std::shared_ptr<RequestState> state;
};

struct Engine::Impl {
  LoadedModel model;  // before the engine: it reads the tokenizer until it stops
  ModelConfig config;
  std::unique_ptr<ServingEngine> engine;
};

// A RequestHandle over the engine's RequestState (or the refusal).
Expected<std::shared_ptr<RequestHandle>> wrap_request(Expected<std::shared_ptr<RequestState>> s);

}  // namespace tessera
