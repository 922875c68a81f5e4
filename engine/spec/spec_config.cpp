#include "engine/spec/spec_config.h"

#include "engine/models/model_weights.h"

namespace tessera {

const char* name(SpecMethod m) {
  switch (m) {
    case SpecMethod::none: return "none";
    case SpecMethod::draft: return "draft";
    case SpecMethod::ngram: return "ngram";
    case SpecMethod::jacobi: return "jacobi";
  }
  return "?";
}

// More proposals than this cost a target pass as much as a prompt chunk and
// are almost never all accepted.
constexpr int32_t kMaxSpecTokens = 32;

Status validate(const SpecConfig& c, int32_t max_context) {
  if (c.method == SpecMethod::none) return Status::ok();
  const char* flag = c.method == SpecMethod::jacobi ? "--jacobi" : "--spec-tokens";
  if (c.max_k < 1 || c.max_k > kMaxSpecTokens || c.max_k >= max_context)
    return invalid_argument(std::string(flag) + ": must be in [1, " + std::to_string(kMaxSpecTokens) + "], got " + std::to_string(c.max_k));
  if (c.method == SpecMethod::ngram && (c.ngram < 1 || c.ngram > 64))
    return invalid_argument("--lookup-ngram: must be in [1, 64], got " + std::to_string(c.ngram));
  if (c.method == SpecMethod::draft && !c.draft) return invalid_argument("--draft-model: no draft model given");
  return Status::ok();
}

}  // namespace tessera
