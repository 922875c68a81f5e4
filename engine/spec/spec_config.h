#pragma once
// How the engine speculates (docs/serving.md, "Speculative decoding"): which
// proposer guesses the next tokens of a decoding sequence, how many at most,
// and whether each sequence's count follows its acceptance rate. The target
// scores every proposal in one step and keeps the prefix its own sampling
// agrees with, so the output is the target's either way.
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace tessera {

struct ModelWeights;

enum class SpecMethod : uint8_t {
  none,
  draft,   // a smaller model with the same vocabulary proposes (--draft-model)
  ngram,   // prompt lookup: the tokens after the latest earlier match of the text's last n-gram (--lookup-ngram)
  jacobi,  // the previous pass's own guesses, iterated to the sequential fixed point (--jacobi, greedy only)
};
const char* name(SpecMethod m);

struct SpecConfig {
  SpecMethod method = SpecMethod::none;
  int32_t max_k = 4;     // proposals a sequence may score in one step (--spec-tokens, --jacobi K)
  int32_t ngram = 3;     // ngram: the longest n-gram matched (n down to 1)
  bool adaptive = true;  // per-sequence k from its acceptance rate (AdaptiveK)
  std::shared_ptr<const ModelWeights> draft;  // draft: the draft model, on the target's backend
  // Tests only: a deliberately wrong acceptance rule (verify.h, AcceptRule)
  // shows that the distribution test can fail.
  bool wrong_rule_for_tests = false;
};

// Checks the combination (one line naming the flag when it is refused).
Status validate(const SpecConfig& c, int32_t max_context);

}  // namespace tessera
