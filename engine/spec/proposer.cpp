#include "engine/spec/proposer.h"

#include "engine/runtime/model_runner.h"
#include "engine/spec/draft_proposer.h"
#include "engine/spec/jacobi_proposer.h"
#include "engine/spec/ngram_proposer.h"

namespace tessera {

Expected<std::unique_ptr<Proposer>> make_proposer(const SpecConfig& config, const ModelRunner& target, const RunnerOptions& options) {
  switch (config.method) {
    case SpecMethod::none: return std::unique_ptr<Proposer>();
    case SpecMethod::ngram: return std::unique_ptr<Proposer>(std::make_unique<NgramProposer>(config.ngram));
    case SpecMethod::jacobi: return std::unique_ptr<Proposer>(std::make_unique<JacobiProposer>());
    case SpecMethod::draft: {
      // The draft serves the target's steps: its context, sequences and tokens per step.
      RunnerOptions o = options;
      o.max_context = target.max_context();
      o.max_seqs = target.max_seqs();
      o.max_prefill_tokens = target.max_tokens_per_step();
      TS_ASSIGN_OR_RETURN(auto d, DraftProposer::create(config.draft, o, target.config().vocab_size, target.weights().tokenizer));
      return std::unique_ptr<Proposer>(std::move(d));
    }
  }
  return invalid_argument("speculation: unknown method");
}

}  // namespace tessera
