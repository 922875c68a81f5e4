#pragma once
// What a serving engine takes and gives back: requests with their own
// sampling parameters, the stream of tokens each produces, why it finished,
// and the metrics a server exports. The engine itself is tessera/engine.h.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/sampling.h"

namespace tessera {

enum class FinishReason : uint8_t {
  none,       // still running
  stop,       // a stop token, EOS or a stop string
  length,     // max_tokens, or the context is full
  cancelled,  // Engine::cancel
  error,      // the engine could not run it (the message says why)
};
TESSERA_API const char* to_string(FinishReason reason);

struct Request {
  std::vector<int32_t> prompt;  // token ids (BOS included where the model wants one), at least one
  int32_t max_tokens = 16;      // tokens to generate, >= 1
  SamplerParams sampling;       // temperature, top-k/p, min-p, penalties, logit bias, seed
  // Sampling one of these ends the sequence (reason stop); the token itself
  // is not output. The model's EOS is one too unless ignore_eos.
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  // Stop strings, matched on the detokenized output; the text that matched
  // is not output, and text that may be the start of one is held back until
  // it is known not to be.
  std::vector<std::string> stop;
  // -1: none; 0: the chosen token's log-probability; k > 0: and the k most
  // probable alternatives (log-softmax of the model's raw logits).
  int32_t logprobs = -1;
  // Sequences to sample from the prompt (parallel sampling): the prompt is
  // computed once and its KV blocks shared copy-on-write; sequence i samples
  // with seed sampling.seed + i.
  int32_t n = 1;
  // Detokenize (for stop strings and TokenOutput::text); off when the
  // caller only wants ids, or the model has no tokenizer.
  bool detokenize = true;
};

// One event of a request's stream: a token of sequence `index`, or (token
// -1) the end of a sequence.
struct TokenOutput {
  int32_t index = 0;     // which of the request's n sequences
  int32_t token = -1;    // -1: no new token (the sequence's end)
  std::string text;      // text now final (may be empty: held back for a stop string or an incomplete character)
  TokenLogprob logprob{};               // when the request asked for logprobs
  std::vector<TokenLogprob> top_logprobs;
  FinishReason finish = FinishReason::none;  // set on the sequence's last event
  std::string error;                         // when finish == error
};

// Wall-clock times of one request, in milliseconds from its submission.
struct RequestMetrics {
  double queue_ms = 0;              // until its first step was scheduled
  double ttft_ms = 0;               // until its first token
  double e2e_ms = 0;                // until it finished
  std::vector<double> itl_ms;       // every gap between two tokens of sequence 0
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  int64_t generated_tokens = 0;     // over all n sequences
  int32_t preemptions = 0;
};

struct SequenceResult {
  std::vector<int32_t> tokens;  // generated ids (stop tokens excluded)
  std::string text;             // their text (when detokenized)
  std::vector<TokenLogprob> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  FinishReason finish = FinishReason::none;
  std::string error;
};

struct RequestResult {
  std::vector<SequenceResult> sequences;  // n of them, in index order
  RequestMetrics metrics;
};

// What the engine is doing now, and has done since it started.
struct EngineMetrics {
  int32_t running = 0;
  int32_t waiting = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;   // held by a sequence
  int32_t kv_blocks_cached = 0; // held by no sequence, kept for the prefix cache
  int32_t kv_blocks_peak = 0;   // most ever held at once
  int64_t prefix_queries = 0;   // prompts looked up
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_evictions = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t step_tokens = 0;       // tokens over every step (step_tokens / steps: mean tokens per step)
  int64_t requests_finished = 0;
  int64_t tokens_generated = 0;
  double step_ms = 0;            // wall time in model steps (submit to collect)
  double host_ms = 0;            // wall time in the engine loop outside model steps and proposing
  // Every (sequence, step) that yielded tokens: tokens_generated /
  // decode_passes is the tokens per target pass (1 without speculation).
  int64_t decode_passes = 0;
  // Speculative decoding (EngineOptions::speculative): the method, the
  // proposed tokens the target scored, those it accepted, the passes that
  // scored any, and wall time spent proposing (a draft model's steps).
  std::string spec_method = "none";
  int64_t spec_proposed = 0, spec_accepted = 0, spec_passes = 0;
  double propose_ms = 0;
  // A draft model's KV: positions it computed to catch up with its
  // sequences (prompts, accepted tokens), and those a sequence of an n > 1
  // request took from a sibling's instead (the prompt, shared copy-on-write).
  int64_t spec_draft_fed_tokens = 0, spec_draft_forked_tokens = 0;
  // Disaggregation's prefill side: the (chunk, KV pool) hand-overs made while
  // the step still ran, as each layer's K or V was written, and those made
  // after it (a device that does not say when a pool is written, or a
  // pipeline-parallel step).
  int64_t kv_exports_during_step = 0, kv_exports_after_step = 0;
  double acceptance_rate() const { return spec_proposed > 0 ? (double)spec_accepted / (double)spec_proposed : 0; }
  double tokens_per_pass() const { return decode_passes > 0 ? (double)tokens_generated / (double)decode_passes : 0; }
};

}  // namespace tessera
