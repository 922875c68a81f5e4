#pragma once
// Opening a ServingEngine over a model in ../shared, and running the greedy
// reference cases through it, for the engine's tests.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <filesystem>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "engine/api/model_impl.h"
#include "engine/kv/kv_type.h"
#include "engine/serving/serving_engine.h"
#include "support/reference_cases.h"

namespace tessera::testing {

struct EngineSetup {
  std::string model;      // under ../shared
  std::string tokenizer;  // under ../shared, or empty
  std::string backend = "cpu";
  int32_t ctx = 0;  // at most this context (0: the model's)
  int32_t kv_blocks = 0;  // KV blocks of 16 tokens; 0: max_num_seqs whole contexts
  std::string kv_type = "auto";  // --kv-type
  EngineConfig config;
  std::function<void(RunnerOptions&)> adjust_runner;  // last word on the runner's options (a split over ranks)
  EngineSetup() { config.scheduler.max_num_seqs = 8; }
};

struct TestEngine {
  LoadedModel model;
  std::unique_ptr<ServingEngine> engine;
  ServingEngine* operator->() { return engine.get(); }
};

inline std::string shared_file(const std::string& rel) { return std::string(TESSERA_SHARED_DIR) + "/" + rel; }

inline TestEngine open_test_engine(const EngineSetup& s) {
  ModelOptions mo;
  mo.path = shared_file(s.model);
  if (!s.tokenizer.empty()) mo.tokenizer_path = shared_file(s.tokenizer);
  mo.backend = s.backend;
  mo.kv_type = s.kv_type;
  TestEngine t;
  auto m = load_model_and_tokenizer(mo);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  t.model = std::move(*m);
  if (s.ctx > 0) mo.max_context = std::min(s.ctx, t.model.weights->config.context_length);
  // Plugins (the Vulkan backend) are found beside the CLI, as the CLI finds them.
  static const bool plugins_loaded = [] {
    register_builtin_backends();
    BackendRegistry::global().load_plugins({std::filesystem::path(TESSERA_BIN).parent_path().string()});
    return true;
  }();
  (void)plugins_loaded;
  RunnerOptions ro = runner_options(mo);
  const TransformerConfig& c = t.model.weights->config;
  // kv_blocks blocks in the pools' type (auto's: every backend these tests run reads f16 pools).
  auto kv_dtype = resolve_kv_type(ro.kv_type, *t.model.weights);
  REQUIRE(kv_dtype.has_value());
  ro.kv_cache_bytes = (uint64_t)s.kv_blocks * 2ull * (uint64_t)c.n_layers * (uint64_t)ro.block_size * bytes_for(*kv_dtype, c.kv_dim());
  if (s.adjust_runner) s.adjust_runner(ro);
  auto e = ServingEngine::create(t.model.weights, t.model.tokenizer.get(), ro, s.config);
  REQUIRE_MESSAGE(e.has_value(), e.status().message());
  t.engine = std::move(*e);
  return t;
}

// One greedy reference line as an engine request: llama2.c's -n STEPS
// (forward passes, prompt included), stopping at BOS as run.c does.
struct ReferenceCase {
  std::vector<int32_t> prompt;
  std::vector<int32_t> full_ids;
  Request request;
};

inline std::vector<ReferenceCase> reference_cases(const std::string& file, int32_t steps, const Tokenizer* tok) {
  std::vector<ReferenceCase> out;
  const bool by_ids = file.ends_with(".txt");
  for (const GreedyCase& c : by_ids ? read_id_cases(shared_file(file)) : read_text_cases(shared_file(file))) {
    ReferenceCase r;
    r.prompt = by_ids ? parse_ids(c.prompt_ids) : tok->encode(c.prompt_text, tok->default_options());
    r.full_ids = c.full_ids;
    r.request.prompt = r.prompt;
    r.request.max_tokens = steps - (int32_t)r.prompt.size() + 1;
    r.request.sampling.temperature = 0;
    r.request.stop_token_ids = {1};
    r.request.ignore_eos = true;
    r.request.detokenize = false;
    out.push_back(std::move(r));
  }
  REQUIRE(!out.empty());
  return out;
}

// got's tokens are want's, and so are its logprobs and each token's top
// alternatives (ids exactly, log-probabilities within 1e-4).
inline void check_same_logprobs(const SequenceResult& got, const SequenceResult& want) {
  REQUIRE(join_ids(got.tokens) == join_ids(want.tokens));
  REQUIRE(got.logprobs.size() == want.logprobs.size());
  REQUIRE(got.top_logprobs.size() == want.top_logprobs.size());
  for (size_t t = 0; t < want.logprobs.size(); ++t) {
    CAPTURE(t);
    CHECK(got.logprobs[t].token == want.logprobs[t].token);
    CHECK(std::fabs(got.logprobs[t].logprob - want.logprobs[t].logprob) <= 1e-4f);
    REQUIRE(got.top_logprobs[t].size() == want.top_logprobs[t].size());
    for (size_t k = 0; k < want.top_logprobs[t].size(); ++k) {
      CHECK(got.top_logprobs[t][k].token == want.top_logprobs[t][k].token);
      CHECK(std::fabs(got.top_logprobs[t][k].logprob - want.top_logprobs[t][k].logprob) <= 1e-4f);
    }
  }
}

inline std::vector<int32_t> full_ids(const ReferenceCase& c, const RequestResult& r) {
  std::vector<int32_t> ids = c.prompt;
  ids.insert(ids.end(), r.sequences.at(0).tokens.begin(), r.sequences.at(0).tokens.end());
  return ids;
}

// Submits every case, the i-th once the engine has generated `stagger` x i
// tokens in all (0: all at once), and checks each gives its reference ids.
inline void check_reference_cases(ServingEngine& e, const std::vector<ReferenceCase>& cases, int64_t stagger = 0) {
  std::vector<std::shared_ptr<RequestState>> handles;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (stagger > 0)
      while (e.metrics().tokens_generated < stagger * (int64_t)i && !handles.back()->done())
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    auto h = e.submit(cases[i].request);
    REQUIRE_MESSAGE(h.has_value(), h.status().message());
    handles.push_back(*h);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const RequestResult& r = handles[i]->wait();
    CAPTURE(i);
    REQUIRE_MESSAGE(r.sequences[0].finish != FinishReason::error, r.sequences[0].error);
    CHECK(join_ids(full_ids(cases[i], r)) == join_ids(cases[i].full_ids));
  }
}

}  // namespace tessera::testing
