#include "engine/spec/ngram_proposer.h"

#include <algorithm>

namespace tessera {

void lookup_ngram(std::span<const int32_t> tokens, int32_t max_n, int32_t k, std::vector<int32_t>* out) {
  out->clear();
  const int64_t len = (int64_t)tokens.size();
  for (int64_t n = std::min<int64_t>(max_n, len - 1); n >= 1; --n) {
    const auto suffix = tokens.subspan((size_t)(len - n));
    // The latest start j < len - n whose n tokens equal the suffix and that
    // has k tokens after it; failing that, the match with the most after it
    // (a run's latest match is right before the suffix: one token follows).
    int64_t best = -1, best_avail = 0;
    for (int64_t j = len - n - 1; j >= 0; --j) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + j)) continue;
      const int64_t avail = std::min<int64_t>(k, len - (j + n));
      if (avail > best_avail) {
        best = j;
        best_avail = avail;
      }
      if (avail >= k) break;
    }
    if (best >= 0) {
      out->assign(tokens.begin() + best + n, tokens.begin() + best + n + best_avail);
      return;
    }
  }
}

Status NgramProposer::propose(std::span<const ProposeItem> items) {
  for (const ProposeItem& it : items) lookup_ngram(it.seq->tokens, max_n_, it.k, &it.seq->spec.proposal);
  return Status::ok();
}

}  // namespace tessera
