#pragma once
// Prompt-lookup decoding (Saxena, 2023): the sequence's last n tokens (n from
// the configured maximum down to 1) are looked for earlier in its prompt and
// generated text; at the latest match with k tokens after it (or the one
// with the most), the tokens that followed it are proposed. No model runs: what repeats its input (summaries, edits, code,
// a small model's loops) is scored k tokens at a time.
#include "engine/spec/proposer.h"

namespace tessera {

// The tokens after an earlier occurrence of tokens' last n-gram, longest n
// in [1, max_n] first: the latest occurrence followed by k tokens, else the
// one followed by the most; at most k of them, into *out (cleared).
void lookup_ngram(std::span<const int32_t> tokens, int32_t max_n, int32_t k, std::vector<int32_t>* out);

class NgramProposer final : public Proposer {
 public:
  explicit NgramProposer(int32_t max_n) : max_n_(max_n) {}
  SpecMethod method() const override { return SpecMethod::ngram; }
  Status propose(std::span<const ProposeItem> items) override;

 private:
  int32_t max_n_;
};

}  // namespace tessera
