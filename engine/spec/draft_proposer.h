#pragma once
// Draft-model speculative decoding (Leviathan et al., 2023; Chen et al.,
// 2023): a smaller model with the same vocabulary, on its own runner and KV
// cache, decodes k tokens for every proposing sequence, batched (one draft
// step per proposed position for the whole batch, after one step that feeds
// each sequence what the draft has not seen yet: its prompt, the tokens the
// target accepted since). Greedy sequences take the draft's argmax; sampled
// ones draw from the draft's distribution with the request's temperature,
// top-k/p and min-p (not its penalties) on a stream of their own, and keep
// that distribution for the acceptance rule. After the target's verdict the
// draft's cache is rolled back to the tokens that are still the sequence's.
#include <vector>

#include "engine/runtime/model_runner.h"
#include "engine/serving/step_batch.h"
#include "engine/spec/proposer.h"

namespace tessera {

class DraftProposer final : public Proposer {
 public:
  // Opens the draft's runner with the target's backend, device, block size,
  // context and limits. A vocabulary that is not the target's is refused.
  static Expected<std::unique_ptr<DraftProposer>> create(std::shared_ptr<const ModelWeights> draft, const RunnerOptions& target,
                                                         int32_t target_vocab, const std::optional<TokenizerData>& target_tokenizer);
  SpecMethod method() const override { return SpecMethod::draft; }
  Status propose(std::span<const ProposeItem> items) override;
  void verified(Sequence& s, std::span<const int32_t> choices, int32_t accepted) override;
  void forget(Sequence& s) override;
  double round_ms() const override { return round_ms_; }
  const ModelRunner& runner() const { return *draft_.runner; }

 private:
  explicit DraftProposer(RunnerWithCache draft) : draft_(std::move(draft)) {}
  // Makes room for s to hold `tokens` in the draft's cache, rolled back to
  // what is still valid first; false (and nothing held) when it cannot.
  bool prepare(Sequence& s, int32_t tokens);
  Status run(const SchedulerOutput& out, bool logits, StepResult* result);
  Status catch_up();
  Status draft_round(int32_t j);

  RunnerWithCache draft_;
  struct Active {
    Sequence* seq;
    int32_t k;
  };
  std::vector<Active> active_;
  SchedulerOutput out_;
  StepBatch batch_;
  std::vector<float> row_scratch_;
  double round_ms_ = 0;
};

}  // namespace tessera
