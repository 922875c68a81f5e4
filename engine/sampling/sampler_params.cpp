// validate(SamplerParams): one line per bad field, naming the CLI flag for
// the fields `tessera run` takes and the field itself for the request-only ones.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/status.h"
#include "tessera/sampling.h"

namespace tessera {
namespace {

std::string format_float(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", (double)v);
  return buf;
}

// NaN fails every comparison, so it is refused here too.
bool in_range(float v, float lo, float hi) { return v >= lo && v <= hi; }

Status validate_logit_bias(const std::vector<std::pair<int32_t, float>>& bias) {
  std::vector<int32_t> ids;
  ids.reserve(bias.size());
  for (const auto& [id, value] : bias) {
    if (id < 0) return invalid_argument("logit_bias: token id " + std::to_string(id) + " is negative");
    if (!in_range(value, -100.0f, 100.0f)) {
      return invalid_argument("logit_bias: the bias of token id " + std::to_string(id) + " must be in [-100, 100], got " +
                              format_float(value));
    }
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  const auto twice = std::adjacent_find(ids.begin(), ids.end());
  if (twice != ids.end()) return invalid_argument("logit_bias: token id " + std::to_string(*twice) + " is given twice");
  return Status::ok();
}

}  // namespace

Status validate(const SamplerParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f) {
    return invalid_argument("--temp: must be a finite number >= 0, got " + format_float(p.temperature));
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return invalid_argument("--top-p: must be in (0, 1], got " + format_float(p.top_p));
  }
  if (p.top_k < 0) return invalid_argument("--top-k: must be >= 0, got " + std::to_string(p.top_k));
  if (!in_range(p.min_p, 0.0f, 1.0f)) return invalid_argument("min_p: must be in [0, 1], got " + format_float(p.min_p));
  if (!in_range(p.presence_penalty, -2.0f, 2.0f)) {
    return invalid_argument("presence_penalty: must be in [-2, 2], got " + format_float(p.presence_penalty));
  }
  if (!in_range(p.frequency_penalty, -2.0f, 2.0f)) {
    return invalid_argument("frequency_penalty: must be in [-2, 2], got " + format_float(p.frequency_penalty));
  }
  if (!std::isfinite(p.repetition_penalty) || p.repetition_penalty <= 0.0f) {
    return invalid_argument("repetition_penalty: must be a finite number > 0, got " + format_float(p.repetition_penalty));
  }
  return validate_logit_bias(p.logit_bias);
}

Status validate(const SamplerParams& p, int32_t vocab_size) {
  TS_TRY(validate(p));
  for (const auto& [id, value] : p.logit_bias) {
    if (id >= vocab_size) {
      return invalid_argument("logit_bias: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                              std::to_string(vocab_size) + ")");
    }
  }
  return Status::ok();
}

}  // namespace tessera
