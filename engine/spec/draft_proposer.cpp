#include "engine/spec/draft_proposer.h"

#include <algorithm>
#include <chrono>

#include "engine/serving/request_state.h"
#include "engine/spec/verify.h"

namespace tessera {

namespace {

Status same_vocabulary(const ModelWeights& draft, int32_t target_vocab, const std::optional<TokenizerData>& target_tok) {
  const int32_t dv = draft.config.vocab_size;
  if (dv != target_vocab)
    return invalid_argument("--draft-model: " + draft.source + " has a vocabulary of " + std::to_string(dv) + " tokens; the target's has " +
                            std::to_string(target_vocab) + " (a draft must share the target's tokenizer)");
  if (draft.tokenizer && target_tok) {
    const auto& a = draft.tokenizer->tokens;
    const auto& b = target_tok->tokens;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
      if (a[i] != b[i])
        return invalid_argument("--draft-model: " + draft.source + "'s token " + std::to_string(i) + " is '" + a[i] + "', the target's '" + b[i] +
                                "' (a draft must share the target's tokenizer)");
  }
  return Status::ok();
}

// The draft's own stream: another seed than the target's, so its draws are
// independent of the target's acceptance coins.
SamplerParams draft_params(const SamplerParams& target) {
  SamplerParams p = target;
  p.presence_penalty = 0;
  p.frequency_penalty = 0;
  p.repetition_penalty = 1;
  p.seed = (target.seed ^ 0xd1b54a32d192ed03ull) * 0x9e3779b97f4a7c15ull | 1;
  return p;
}

}  // namespace

Expected<std::unique_ptr<DraftProposer>> DraftProposer::create(std::shared_ptr<const ModelWeights> draft, const RunnerOptions& target,
                                                               int32_t target_vocab, const std::optional<TokenizerData>& target_tokenizer) {
  TS_TRY(same_vocabulary(*draft, target_vocab, target_tokenizer));
  RunnerOptions o;
  o.backend = target.backend;
  o.device = target.device;
  o.block_size = target.block_size;
  o.max_context = std::min(target.max_context > 0 ? target.max_context : RunnerOptions::kDefaultContextCap, draft->config.context_length);
  o.max_seqs = target.max_seqs;
  o.max_prefill_tokens = std::min(target.max_prefill_tokens, o.max_context);
  if (o.max_prefill_tokens < o.max_seqs)
    return invalid_argument("--draft-model: " + draft->source + "'s context of " + std::to_string(draft->config.context_length) +
                            " tokens cannot hold a step of " + std::to_string(o.max_seqs) + " sequences (--max-num-seqs)");
  o.sample_on_device = true;
  o.strict = target.strict;
  o.batch_invariant = target.batch_invariant;
  TS_ASSIGN_OR_RETURN(RunnerWithCache r, open_runner(std::move(draft), o));
  return std::unique_ptr<DraftProposer>(new DraftProposer(std::move(r)));
}

bool DraftProposer::prepare(Sequence& s, int32_t tokens) {
  BlockManager& blocks = draft_.kv->blocks();
  SpecState& st = s.spec;
  if (!st.draft_holds_blocks) {
    if (!blocks.add_sequence(s.id).is_ok()) return false;
    st.draft_holds_blocks = true;
    st.draft_computed = 0;
  }
  // Whatever the draft fed past the sequence's last token is stale.
  st.draft_computed = std::min(st.draft_computed, (int32_t)s.tokens.size() - 1);
  if (blocks.length(s.id) > st.draft_computed) (void)blocks.truncate(s.id, st.draft_computed);
  if (tokens <= draft_.runner->max_context() && blocks.reserve(s.id, tokens, &copies_).is_ok()) return true;
  forget(s);
  return false;
}

Sequence* DraftProposer::fork_source(const Sequence& s) const {
  if (s.spec.draft_holds_blocks || !s.request) return nullptr;
  for (const auto& o : s.request->seqs)
    if (o.get() != &s && o->spec.draft_holds_blocks && o->spec.draft_computed > 0) return o.get();
  return nullptr;
}

void DraftProposer::fork_from(Sequence& s, Sequence& sibling) {
  BlockManager& blocks = draft_.kv->blocks();
  // What both hold alike: their common tokens, as far as the sibling's draft has computed them.
  const int32_t limit = std::min({sibling.spec.draft_computed, (int32_t)s.tokens.size() - 1, (int32_t)sibling.tokens.size()});
  int32_t common = 0;
  while (common < limit && s.tokens[(size_t)common] == sibling.tokens[(size_t)common]) ++common;
  if (common == 0 || !blocks.fork(sibling.id, s.id).is_ok()) return;
  if (!blocks.truncate(s.id, common).is_ok()) {
    blocks.release(s.id);
    return;
  }
  s.spec.draft_holds_blocks = true;
  s.spec.draft_computed = common;
  forked_tokens_ += common;
}

void DraftProposer::forget(Sequence& s) {
  if (!s.spec.draft_holds_blocks) return;
  draft_.kv->blocks().release(s.id);
  s.spec.draft_holds_blocks = false;
  s.spec.draft_computed = 0;
}

Status DraftProposer::run(const SchedulerOutput& out, bool logits, StepResult* result) {
  batch_.build(out, draft_.kv->blocks(), draft_.runner->max_blocks_per_seq());
  StepRequest req;
  req.args = batch_.args();
  req.block_copies = copies_;  // before this step writes into a block a fork shared
  req.outputs = logits ? StepOutputs::both : StepOutputs::tokens;
  if (req.args.n_logit_rows == 0) req.outputs = StepOutputs::logits;
  TS_ASSIGN_OR_RETURN(const StepTicket t, draft_.runner->submit(req));
  copies_.clear();
  TS_ASSIGN_OR_RETURN(*result, draft_.runner->collect(t));
  return Status::ok();
}

// Feeds every sequence what the draft has not seen, up to (not including)
// its last token, in steps within the draft's token and sequence limits.
Status DraftProposer::catch_up() {
  const int32_t max_tokens = draft_.runner->max_tokens_per_step(), max_seqs = draft_.runner->max_seqs();
  for (;;) {
    out_.seqs.clear();
    out_.n_tokens = 0;
    for (const Active& a : active_) {
      Sequence& s = *a.seq;
      const int32_t behind = (int32_t)s.tokens.size() - 1 - s.spec.draft_computed;
      if (behind <= 0) continue;
      const int32_t take = std::min(behind, max_tokens - out_.n_tokens);
      if (take <= 0 || (int32_t)out_.seqs.size() == max_seqs) break;
      out_.seqs.push_back({&s, s.spec.draft_computed, take, false, 0, 0});
      out_.n_tokens += take;
    }
    if (out_.seqs.empty()) return Status::ok();
    StepResult r;
    TS_TRY(run(out_, false, &r));
    for (const ScheduledSeq& e : out_.seqs) e.seq->spec.draft_computed = e.start + e.n_tokens;
    fed_tokens_ += out_.n_tokens;
  }
}

// Round j feeds position L - 1 + j (the last token, then proposal j - 1) of
// every sequence proposing more than j tokens, and appends proposal j.
Status DraftProposer::draft_round(int32_t j) {
  out_.seqs.clear();
  out_.n_tokens = 0;
  bool logits = false;
  for (const Active& a : active_) {
    if (a.k <= j) continue;
    Sequence& s = *a.seq;
    out_.seqs.push_back({&s, (int32_t)s.tokens.size() - 1 + j, 1, true, j, 1});
    out_.n_tokens += 1;
    logits |= !greedy_on_device(s.sampler.params());
  }
  if (out_.seqs.empty()) return Status::ok();
  StepResult r;
  TS_TRY(run(out_, logits, &r));
  const size_t vocab = (size_t)draft_.runner->config().vocab_size;
  for (size_t i = 0; i < out_.seqs.size(); ++i) {
    Sequence& s = *out_.seqs[i].seq;
    SpecState& st = s.spec;
    st.draft_computed = out_.seqs[i].start + 1;
    if (greedy_on_device(s.sampler.params())) {
      st.proposal.push_back(r.tokens[i]);
      continue;
    }
    if (!st.draft_sampler) st.draft_sampler = std::make_unique<Sampler>(draft_params(s.sampler.params()));
    const size_t at = st.draft_probs.size();
    st.draft_probs.resize(at + vocab);
    const std::span<float> q(st.draft_probs.data() + at, vocab);
    if (s.sampler.params().temperature == 0.0f) {
      // Greedy with adjustments: the draft's argmax (a one-hot q).
      row_scratch_.assign(r.logits.begin() + (ptrdiff_t)(i * vocab), r.logits.begin() + (ptrdiff_t)((i + 1) * vocab));
      st.proposal.push_back(st.draft_sampler->sample(row_scratch_));
      std::fill(q.begin(), q.end(), 0.0f);
      q[(size_t)st.proposal.back()] = 1.0f;
      continue;
    }
    st.draft_sampler->distribution(r.logits.subspan(i * vocab, vocab), q);
    st.proposal.push_back(st.draft_sampler->draw_weighted(q));
  }
  return Status::ok();
}

Status DraftProposer::propose(std::span<const ProposeItem> items) {
  active_.clear();
  deferred_.clear();
  auto sibling_active = [&](const Sequence& s) {
    return std::any_of(active_.begin(), active_.end(), [&](const Active& a) { return a.seq->request == s.request && a.seq != &s; });
  };
  for (const ProposeItem& it : items) {
    Sequence& s = *it.seq;
    s.spec.proposal.clear();
    s.spec.draft_probs.clear();
    if (it.k <= 0) continue;
    // New to the draft with a sibling it can fork from: now, or once the
    // sibling proposing beside it has caught up.
    if (!s.spec.draft_holds_blocks) {
      if (Sequence* from = fork_source(s)) fork_from(s, *from);
      else if (s.request && s.request->seqs.size() > 1 && sibling_active(s)) {
        deferred_.push_back({&s, it.k});
        continue;
      }
    }
    // Positions up to L - 2 + k are fed (the last proposal is not).
    if (prepare(s, (int32_t)s.tokens.size() - 1 + it.k)) active_.push_back({&s, it.k});
  }
  if (active_.empty()) return Status::ok();
  TS_TRY(catch_up());
  if (!deferred_.empty()) {
    for (const Active& d : deferred_) {
      Sequence& s = *d.seq;
      if (Sequence* from = fork_source(s)) fork_from(s, *from);
      if (prepare(s, (int32_t)s.tokens.size() - 1 + d.k)) active_.push_back(d);
    }
    TS_TRY(catch_up());  // what the forked prefix does not cover
  }
  int32_t rounds = 0;
  for (const Active& a : active_) rounds = std::max(rounds, a.k);
  const auto t0 = std::chrono::steady_clock::now();
  for (int32_t j = 0; j < rounds; ++j) TS_TRY(draft_round(j));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / rounds;
  round_ms_ = round_ms_ == 0 ? ms : 0.8 * round_ms_ + 0.2 * ms;
  return Status::ok();
}

void DraftProposer::verified(Sequence& s, std::span<const int32_t> /*choices*/, int32_t accepted) {
  if (!s.spec.draft_holds_blocks) return;
  // The draft fed the last token and proposals [0, k - 1); of those, the
  // accepted ones are still the sequence's. tokens now ends with the
  // target's own token after them, which the draft has not seen.
  const int32_t valid = (int32_t)s.tokens.size() - 1;
  s.spec.draft_computed = std::min(s.spec.draft_computed, valid);
  (void)accepted;
}

}  // namespace tessera
