#include "engine/spec/jacobi_proposer.h"

namespace tessera {

Status JacobiProposer::propose(std::span<const ProposeItem> items) {
  for (const ProposeItem& it : items) {
    SpecState& st = it.seq->spec;
    st.proposal.assign(st.guesses.begin(), st.guesses.begin() + std::min<ptrdiff_t>((ptrdiff_t)st.guesses.size(), it.k));
    // A fresh window (or one the last pass used up) starts from the last token.
    const int32_t fill = st.proposal.empty() ? it.seq->tokens.back() : st.proposal.back();
    st.proposal.resize((size_t)it.k, fill);
  }
  return Status::ok();
}

void JacobiProposer::verified(Sequence& s, std::span<const int32_t> choices, int32_t accepted) {
  // choices[0 .. accepted] are now the sequence's tokens; the outputs after
  // them are the next guesses.
  const size_t from = (size_t)accepted + 1;
  if (from >= choices.size()) {
    s.spec.guesses.clear();
    return;
  }
  s.spec.guesses.assign(choices.begin() + (ptrdiff_t)from, choices.end());
}

}  // namespace tessera
