#pragma once
// Speculative decoding configured for the engine tests (CPU and Vulkan):
// each reference model's draft, and the method set on an EngineSetup.
#include <map>
#include <memory>
#include <string>

#include "engine/api/model_impl.h"
#include "engine/engine_fixture.h"

namespace tessera::testing {

inline std::shared_ptr<const ModelWeights> shared_weights(const std::string& rel) {
  static std::map<std::string, std::shared_ptr<const ModelWeights>> cache;
  auto& w = cache[rel];
  if (!w) {
    auto loaded = open_weights(shared_file(rel));
    REQUIRE_MESSAGE(loaded.has_value(), loaded.status().message());
    w = std::make_shared<ModelWeights>(std::move(*loaded));
  }
  return w;
}

// A draft for each reference model: another model of the same vocabulary
// where there is one (a poor draft: many rejections), else the model itself.
inline std::string draft_for(const std::string& model) {
  if (model == "models/stories260K.bin") return "models/aidreams260K.bin";
  if (model == "models/aidreams260K.bin") return "models/stories260K.bin";
  return model;
}

inline void speculate(EngineSetup& s, SpecMethod m, int32_t k = 4, bool adaptive = true) {
  s.config.spec.method = m;
  s.config.spec.max_k = k;
  s.config.spec.adaptive = adaptive;
  if (m == SpecMethod::draft) s.config.spec.draft = shared_weights(draft_for(s.model));
}

}  // namespace tessera::testing
