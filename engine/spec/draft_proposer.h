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
// The n sequences of one request share their prompt's draft KV: the first
// catches up, the others fork its blocks (copy-on-write) instead of feeding
// the prompt again.
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
  int64_t fed_tokens() const override { return fed_tokens_; }
  int64_t forked_tokens() const override { return forked_tokens_; }
  const ModelRunner& runner() const { return *draft_.runner; }

 private:
  explicit DraftProposer(RunnerWithCache draft) : draft_(std::move(draft)) {}
  // Makes room for s to hold `tokens` in the draft's cache, rolled back to
  // what is still valid first; false (and nothing held) when it cannot.
  bool prepare(Sequence& s, int32_t tokens);
  // For a sequence the draft has not seen: a sibling of its request (n > 1)
  // whose draft KV holds part of their common prefix, or null.
  Sequence* fork_source(const Sequence& s) const;
  // Gives s the sibling's draft blocks of their common prefix (copy-on-write).
  void fork_from(Sequence& s, Sequence& sibling);
  Status run(const SchedulerOutput& out, bool logits, StepResult* result);
  Status catch_up();
  Status draft_round(int32_t j);

  RunnerWithCache draft_;
  struct Active {
    Sequence* seq;
    int32_t k;
  };
  std::vector<Active> active_, deferred_;  // deferred: waiting for a sibling's catch-up to fork from
  std::vector<BlockCopy> copies_;           // copy-on-write of shared draft blocks, run before the next draft step
  int64_t fed_tokens_ = 0, forked_tokens_ = 0;
  SchedulerOutput out_;
  StepBatch batch_;
  std::vector<float> row_scratch_;
  double round_ms_ = 0;
};

}  // namespace tessera
