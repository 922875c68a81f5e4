#pragma once
// Jacobi decoding (Santilli et al., 2023; the iteration of lookahead and
// consistency decoding): a window of k guessed tokens after the sequence's
// last token is scored in one pass, and the pass's greedy output at every
// position becomes the next guess there. The outputs up to and including
// the first position whose guess was wrong equal what sequential greedy
// decoding gives (each was conditioned only on correct tokens), so they are
// kept; the rest, conditioned on a wrong guess somewhere before them, are the
// next pass's guesses, and the window is topped up by repeating its last
// guess. A pass keeps at least one token, so it never takes more passes than
// sequential decoding; the engine reports how many it takes per token.
// Greedy only: at temperature > 0 the sequence decodes plainly.
#include "engine/spec/proposer.h"

namespace tessera {

class JacobiProposer final : public Proposer {
 public:
  SpecMethod method() const override { return SpecMethod::jacobi; }
  Status propose(std::span<const ProposeItem> items) override;
  void verified(Sequence& s, std::span<const int32_t> choices, int32_t accepted) override;
  bool greedy_only() const override { return true; }
  bool wants_every_choice() const override { return true; }
};

}  // namespace tessera
