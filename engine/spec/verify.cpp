#include "engine/spec/verify.h"

#include <algorithm>
#include <limits>

#include "engine/sampling/logit_adjustments.h"

namespace tessera {

bool greedy_on_device(const SamplerParams& p) { return p.temperature == 0.0f && !adjusts_logits(p); }

namespace {

// The token a plain step would have taken from this row.
int32_t plain_choice(Sampler& target, const VerifyRow& row, VerifyScratch& s) {
  if (row.device_token >= 0 && greedy_on_device(target.params())) return row.device_token;
  s.logits.assign(row.logits.begin(), row.logits.end());
  return target.sample(s.logits);
}

}  // namespace

RowVerdict verify_row(Sampler& target, const VerifyRow& row, VerifyScratch& s, AcceptRule rule) {
  if (row.proposal < 0 || target.params().temperature == 0.0f) {
    const int32_t t = plain_choice(target, row, s);
    return {t, row.proposal >= 0 && t == row.proposal};
  }
  const size_t n = row.logits.size();
  s.p.resize(n);
  target.distribution(row.logits, s.p);
  const size_t x = (size_t)row.proposal;
  const float px = s.p[x];
  const float qx = row.q.empty() ? 1.0f : row.q[x];
  // min(1, p/q); q(x) = 0 cannot be proposed, but a rounding draft could: accept iff p(x) > 0.
  const float ratio = qx > 0.0f ? px / qx : (px > 0.0f ? std::numeric_limits<float>::infinity() : 0.0f);
  if (target.uniform() < ratio) return {row.proposal, true};
  if (rule == AcceptRule::resample_target) return {target.draw_weighted(s.p), false};
  // The residual max(0, p - q); q one-hot at x leaves p without x.
  float mass = 0.0f;
  if (row.q.empty()) {
    s.p[x] = 0.0f;
    for (float v : s.p) mass += v;
  } else {
    for (size_t i = 0; i < n; ++i) {
      s.p[i] = std::max(0.0f, s.p[i] - row.q[i]);
      mass += s.p[i];
    }
  }
  // p <= q everywhere (rounding, or p = q): nothing left over; p itself is the answer.
  if (!(mass > 0.0f)) target.distribution(row.logits, s.p);
  return {target.draw_weighted(s.p), false};
}

}  // namespace tessera
