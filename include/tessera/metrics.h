#pragma once
#include <cstdint>

namespace tessera {

// What one generation measured. Times are wall-clock on the host.
struct GenerationMetrics {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;  // sampled tokens
  double prefill_ms = 0;         // feeding the prompt
  double ttft_ms = 0;            // start to the first sampled token
  double decode_ms = 0;          // every decode step after the first token
  int64_t decode_steps = 0;
  double prefill_tok_s() const { return prefill_ms > 0 ? prompt_tokens * 1e3 / prefill_ms : 0; }
  double tpot_ms() const { return decode_steps > 0 ? decode_ms / (double)decode_steps : 0; }
  double decode_tok_s() const { return decode_ms > 0 ? decode_steps * 1e3 / decode_ms : 0; }
};

}  // namespace tessera
