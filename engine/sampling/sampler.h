#pragma once
// Turns one sequence's rows of logits into token ids. The logits are first
// adjusted (logit bias, repetition, presence and frequency penalties over
// the tokens the sequence has seen: logit_adjustments.h); then greedy at
// temperature 0, else temperature → softmax → top-k → top-p (nucleus) →
// min-p → a draw from a seeded xorshift64* stream, so a seed replays the same
// tokens. With top_k off and the adjustments and min-p at their defaults the
// arithmetic follows llama2.c's run.c (sample_mult / sample_topp, one coin per
// call), so a run.c seed gives run.c's tokens (ties in sorting aside).
//
// A Sampler is one sequence's: its state is the params, the rng and the token
// history, and nothing else, so a copy (a forked sequence) continues exactly
// as the original would, and re-running a sequence's steps changes nothing.
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/sampling/logit_adjustments.h"
#include "tessera/sampling.h"

namespace tessera {

class Sampler {
 public:
  // `params` must pass validate().
  explicit Sampler(SamplerParams params);

  // The prompt, for the repetition penalty (replaces an earlier one).
  void set_prompt(std::span<const int32_t> prompt) { history_.set_prompt(prompt); }
  // A token the sequence generated, for the penalties: the engine calls it
  // with each token it keeps, sampled here or not.
  void accept(int32_t token) { history_.accept(token); }

  // Returns a token id in [0, logits.size()); logits must not be empty.
  // Tokens are ranked by their adjusted logits (ties: lower index first), so
  // top_k 1 and a tiny top_p give exactly the temperature-0 argmax even where
  // two probabilities round to the same float. The logits are left as they
  // are. Allocates only the first time it sees a vocabulary larger than
  // before (a copy starts with no buffers). Costs O(vocabulary) plus the
  // adjustments' O(distinct tokens seen), plus sorting what top-k or top-p keep.
  // The draw stream's state: a sequence moved to another worker after its
  // first token (disaggregation) continues the same stream there.
  uint64_t rng_state() const { return rng_state_; }
  void set_rng_state(uint64_t state) { rng_state_ = state; }
  int32_t sample(std::span<float> logits);

  // The probability sample() would draw each token with from these logits:
  // after the adjustments, temperature, top-k, top-p and min-p, zero for the
  // tokens those leave out (one-hot at the argmax at temperature 0).
  // Speculative sampling's acceptance rule needs the target's distribution
  // and the draft's. probs.size() must equal logits.size(). Draws nothing.
  void distribution(std::span<const float> logits, std::span<float> probs);
  // A uniform draw in [0, 1) from this sequence's stream.
  float uniform() { return random_f32(); }
  // A token drawn with one coin from non-negative weights (they need not sum
  // to 1); the last token with weight when rounding runs past the end. The
  // weights must not all be zero.
  int32_t draw_weighted(std::span<const float> weights);

  // The adjustments sample() makes first, in place on `logits`.
  void adjust(std::span<float> logits) const { adjust_logits(params_, history_, logits); }

  const SamplerParams& params() const { return params_; }
  const TokenHistory& history() const { return history_; }

 private:
  struct Candidate {
    float rank;   // the adjusted logit (NaN as -inf): the sort key
    float value;  // scaled logit, then probability
    int32_t index;
  };
  // Buffers sample() reuses; they hold nothing from one call to the next, so
  // copying a Sampler leaves them behind.
  struct Scratch {
    std::vector<float> adjusted;  // the caller's logits, adjusted
    std::vector<float> probs;     // adjusted logits / temperature, then their softmax
    std::vector<Candidate> candidates;
    Scratch() = default;
    Scratch(const Scratch&) {}
    Scratch& operator=(const Scratch&) { return *this; }
    Scratch(Scratch&&) = default;
    Scratch& operator=(Scratch&&) = default;
  };

  // What top-k or top-p keep: candidates [0, last] of scratch_.candidates,
  // their weights summing to `cumulative`; or a single token (`only`).
  struct Kept {
    size_t last = 0;
    float cumulative = 0;
    int32_t only = -1;
  };

  uint32_t random_u32();
  float random_f32();  // [0, 1)
  // The adjusted logits: `logits` itself when nothing adjusts them.
  std::span<const float> scores_of(std::span<const float> logits);
  // probs = scores / temperature, in scratch_.probs.
  std::span<float> scaled(std::span<const float> scores);
  Kept keep_top_k(std::span<const float> logits);
  Kept keep_top_p(std::span<const float> logits);
  size_t min_p_end(size_t last) const;
  int32_t draw(size_t last, float cumulative, float coin) const;
  // The kept candidates' probabilities into probs (zeroed first).
  void spread(const Kept& kept, std::span<float> probs) const;

  SamplerParams params_;
  uint64_t rng_state_;
  TokenHistory history_;
  Scratch scratch_;
};

}  // namespace tessera
