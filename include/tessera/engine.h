#pragma once
// The serving engine's public face: one model serving many requests at once
// (continuous batching, chunked prefill, preemption, prefix caching,
// parallel sampling) on a thread of its own. Submit from any thread; take
// each request's tokens by callback, by pulling its stream, or all at once.
//
//   auto engine = tessera::Engine::open({.model = {.path = "model.gguf"}});
//   tessera::Request q;
//   q.prompt = *(*engine)->encode("Once upon a time");
//   q.max_tokens = 32;
//   auto h = (*engine)->submit(q, tessera::Engine::stream);
//   for (tessera::TokenOutput t; (*h)->next(&t);) std::cout << t.text;
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/device_info.h"
#include "tessera/export.h"
#include "tessera/model_config.h"
#include "tessera/serving.h"
#include "tessera/status.h"
#include "tessera/tessera.h"

namespace tessera {

struct EngineOptions {
  // The model and its device (path, tokenizer, backend, context, passes, ...);
  // its max_prefill_tokens and kv_cache_bytes are not used: the limits below are.
  ModelOptions model;
  int32_t max_num_seqs = 16;             // sequences one step may carry
  int32_t max_num_batched_tokens = 256;  // tokens one step may carry (>= max_num_seqs)
  int32_t max_prefill_chunk = 0;         // tokens of one prompt per step; 0: max_num_batched_tokens
  // K/V pools over every layer, in bytes; 0: kv_memory_fraction of the
  // device's free memory after the weights, capped at what 2 x max_num_seqs
  // whole-context sequences need: a full batch, and as much again for the
  // prefix cache (docs/serving.md).
  uint64_t kv_cache_memory = 0;
  double kv_memory_fraction = 0;  // 0: 0.9 on a GPU, 0.5 on the CPU
  bool prefix_caching = true;
  // --pipeline-parallel: independent batches kept in flight across the
  // stages, so decode steps overlap too (docs/parallelism.md). 0: one a
  // stage (at most 2); 1: one batch, the stages take turns on each step.
  int32_t pipeline_batches = 0;
  // "fcfs" (the queue in arrival order, steps as full as the limits allow)
  // or "slo": admission and prompt chunks chosen to maximize the requests
  // that meet both targets below (docs/serving.md, "SLO-aware scheduling").
  std::string schedule = "fcfs";
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  // Speculative decoding (docs/serving.md, "Speculative decoding"): each
  // step scores up to `tokens` guessed tokens per decoding sequence and keeps
  // those the target's own sampling accepts, so the output is the target's.
  struct Speculative {
    // "none"; "draft" (draft_model proposes); "ngram" (prompt lookup: the
    // tokens after the latest earlier match of the last n-gram); "jacobi"
    // (the previous pass's own outputs; greedy requests only).
    std::string method = "none";
    std::string draft_model;  // a model file (or synthetic:TYPE) with the target's vocabulary
    int32_t tokens = 4;       // proposals per sequence and step, at most (--spec-tokens, --jacobi K)
    int32_t ngram = 3;        // the longest n-gram prompt lookup matches (--lookup-ngram)
    bool adaptive = true;     // each sequence's count follows its acceptance rate
  } speculative;
};

// One submitted request: its stream and its result. Valid after it finishes.
class TESSERA_API RequestHandle {
 public:
  ~RequestHandle();
  uint64_t id() const;
  // The next event (for requests submitted with Engine::stream); false
  // when every sequence has ended and its last event was taken.
  bool next(TokenOutput* out);
  // Blocks until the request has finished.
  const RequestResult& wait();
  bool done() const;

  struct Impl;
  explicit RequestHandle(std::unique_ptr<Impl> impl);

 private:
  friend class Engine;
  std::unique_ptr<Impl> impl_;
};

class TESSERA_API Engine {
 public:
  enum Delivery { result_only, stream };

  static Expected<std::unique_ptr<Engine>> open(const EngineOptions& options);
  // Requests still queued or running end as cancelled.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Refused with one line naming the field (empty prompt, ids outside the
  // vocabulary, max_tokens < 1, top_p outside (0, 1], a prompt that does
  // not fit the context or the cache, ...); the engine keeps serving.
  Expected<std::shared_ptr<RequestHandle>> submit(const Request& request, Delivery delivery = result_only);
  // Each event on the engine's thread as it is made: keep the callback short.
  Expected<std::shared_ptr<RequestHandle>> submit(const Request& request, std::function<void(const TokenOutput&)> on_token);
  // Ends the request (reason cancelled) at the next step; its KV blocks are
  // free after that step.
  void cancel(RequestHandle& request);

  EngineMetrics metrics() const;
  // The KV cache it sized: blocks, tokens, bytes and full-context sequences.
  std::string memory_summary() const;
  const ModelConfig& config() const;
  const DeviceInfo& device() const;
  int32_t max_context() const;
  const std::vector<std::string>& placement_notes() const;
  bool has_tokenizer() const;
  // As Model::encode: the vocabulary's BOS/EOS added.
  Expected<std::vector<int32_t>> encode(const std::string& text) const;
  // As Model::decode: the text of ids[1..] as llama2.c prints it.
  Expected<std::string> decode(const std::vector<int32_t>& ids) const;
  // The model's chat template (Model::chat_template); empty when it has none.
  std::string chat_template() const;
  // A rendered chat prompt to ids as llama.cpp's server does: text spelling
  // a special token (<|start_header_id|>, <start_of_turn>) is that token, and
  // BOS is added where the vocabulary asks for it unless the text already
  // begins with it (templates that print {{ bos_token }}).
  Expected<std::vector<int32_t>> encode_chat(const std::string& rendered) const;
  // The text of a special token (BOS, EOS) as templates print it; empty
  // without a tokenizer.
  std::string token_text(int32_t id) const;
  // Token ids llama2.c checkpoints stop on (BOS) or the vocabulary's EOS.
  int32_t bos_id() const;
  int32_t eos_id() const;

  struct Impl;
  Impl& impl() { return *impl_; }  // the library's own tests reach the engine through it

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
