#include "engine/serving/scheduler.h"

#include <algorithm>

namespace tessera {

Expected<SchedulePolicy> parse_schedule_policy(const std::string& name) {
  if (name == "fcfs") return SchedulePolicy::fcfs;
  if (name == "slo") return SchedulePolicy::slo;
  return invalid_argument("--schedule: expected fcfs or slo, got '" + name + "'");
}

Scheduler::Scheduler(const SchedulerConfig& config, BlockManager& blocks, PrefixCache* prefix)
    : config_(config), blocks_(blocks), prefix_(prefix) {
  if (config_.max_prefill_chunk <= 0) config_.max_prefill_chunk = config_.max_num_batched_tokens;
  config_.batches = std::max(1, config_.batches);
}

int32_t Scheduler::batch_size(int32_t batch) const {
  int32_t n = 0;
  for (const Sequence* s : running_) n += s->batch == batch;
  return n;
}

int32_t Scheduler::emptiest_batch() const {
  int32_t best = 0, best_n = batch_size(0);
  for (int32_t b = 1; b < config_.batches; ++b)
    if (const int32_t n = batch_size(b); n < best_n) best = b, best_n = n;
  return best;
}

void Scheduler::add(Sequence* s) {
  s->status = SeqStatus::waiting;
  waiting_.push_back(s);
}

void Scheduler::add_running(Sequence* s) {
  s->status = SeqStatus::running;
  s->admitted = next_admission_++;
  s->batch = emptiest_batch();
  running_.push_back(s);
}

void Scheduler::release_blocks(Sequence& s) {
  if (!s.holds_blocks) return;
  if (prefix_) prefix_->forget(s.id);
  blocks_.release(s.id);
  s.holds_blocks = false;
}

void Scheduler::remove(Sequence* s) {
  std::erase(running_, s);
  std::erase(waiting_, s);
  release_blocks(*s);
  s->status = SeqStatus::finished;
}

int32_t Scheduler::chunk_for(const Sequence& s, int32_t budget) const {
  const int32_t need = s.pending();
  if (need <= 1) return std::min(need, budget);
  return std::min({need, budget, config_.max_prefill_chunk});
}

bool Scheduler::try_reserve(Sequence& s, int32_t tokens, std::vector<BlockCopy>* copies) {
  // reserve() leaves the manager unchanged when it fails.
  return blocks_.reserve(s.id, tokens, copies).is_ok();
}

int32_t ScheduledSeq::token_at(int32_t p) const {
  const int32_t own = (int32_t)seq->tokens.size();
  return p < own ? seq->tokens[(size_t)p] : seq->spec.proposal[(size_t)(p - own)];
}

void Scheduler::preempt(Sequence* s, SchedulerOutput* out) {
  std::erase(running_, s);
  s->spec.proposal.clear();
  s->spec.draft_probs.clear();
  release_blocks(*s);
  s->num_computed = 0;
  s->status = SeqStatus::waiting;
  waiting_.push_front(s);
  out->preempted.push_back(s);
  ++preemptions_;
}

bool Scheduler::admit(Sequence& s) {
  if (s.holds_blocks) return true;
  hit_blocks_.clear();
  if (prefix_) prefix_->match(s.tokens, &hit_blocks_);
  if (!blocks_.add_sequence(s.id, hit_blocks_).is_ok()) return false;
  s.holds_blocks = true;
  s.num_computed = (int32_t)hit_blocks_.size() * blocks_.block_size();
  return true;
}

// A step under the slo policy may always carry this many prompt tokens
// beyond the running decodes, so that the queue moves even when the decodes
// alone fill the TPOT target.
constexpr int32_t kSloMinPrefillTokens = 16;
// Steps are planned to this share of the TPOT target: a request's TPOT is
// the mean of its steps, and steps scatter around the fitted line (other
// load on the machine, attention growing with context), so a plan at the
// target itself would miss it about half the time.
constexpr double kSloStepShare = 0.75;

int32_t Scheduler::slo_token_budget() const {
  int32_t decodes = 0;
  for (const Sequence* s : running_) decodes += s->pending() <= 1 ? 1 : 0;
  const int32_t fit = cost_.tokens_within(kSloStepShare * config_.slo_tpot_ms);
  if (decodes == 0) return config_.max_num_batched_tokens;  // nothing's TPOT to protect
  return std::min(config_.max_num_batched_tokens, std::max(fit, decodes + kSloMinPrefillTokens));
}

void Scheduler::order_waiting_for_slo(std::chrono::steady_clock::time_point now) {
  // Resumed sequences (preempted, or forks: their first token is out) keep
  // the front; the others can still make the TTFT target if their prefill,
  // started now, ends in time.
  auto resumed = [](const Sequence* s) { return s->generated() > 0; };
  auto on_time = [&](const Sequence* s) {
    const double waited = std::chrono::duration<double, std::milli>(now - s->arrival).count();
    return waited + cost_.predict_ms(s->pending()) <= config_.slo_ttft_ms;
  };
  auto it = std::stable_partition(waiting_.begin(), waiting_.end(), resumed);
  std::stable_partition(it, waiting_.end(), on_time);
}

Status Scheduler::schedule(SchedulerOutput* out, std::chrono::steady_clock::time_point now, int32_t batch) {
  if (batch < 0 || batch >= config_.batches)
    return invalid_argument("scheduler: batch " + std::to_string(batch) + " of " + std::to_string(config_.batches));
  out->seqs.clear();
  out->copies.clear();
  out->preempted.clear();
  out->n_tokens = 0;
  const bool slo = slo_active();
  if (slo) order_waiting_for_slo(now);
  int32_t budget = slo ? slo_token_budget() : config_.max_num_batched_tokens;
  // Running sequences first, oldest first; a sequence that cannot get its
  // blocks preempts the newest until it can (or is itself the newest).
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* s = running_[i];
    if (s->in_flight || s->batch != batch) {
      ++i;
      continue;
    }
    int32_t take = chunk_for(*s, budget);
    if (take <= 0) {
      ++i;
      continue;
    }
    // A decode with a proposal scores it in the same step, as far as the
    // budget goes.
    std::vector<int32_t>& proposal = s->spec.proposal;
    int32_t proposed = 0;
    if (s->pending() == 1 && !proposal.empty()) {
      proposed = std::min((int32_t)proposal.size(), budget - take);
      proposal.resize((size_t)proposed);  // draft_probs' rows past it are never read
      take += proposed;
    }
    bool preempted_self = false;
    while (!try_reserve(*s, s->num_computed + take, &out->copies)) {
      // The newest sequence after s without a step in flight (s itself at
      // worst): an in-flight step is writing its sequences' blocks, and
      // those before s are in this step already.
      Sequence* victim = s;
      for (size_t j = running_.size() - 1; j > i; --j)
        if (!running_[j]->in_flight) {
          victim = running_[j];
          break;
        }
      preempt(victim, out);
      if (victim == s) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;  // s was the newest it could preempt
    out->seqs.push_back({s, s->num_computed, take, s->num_computed + take == (int32_t)s->tokens.size() + proposed, proposed, 1 + proposed});
    out->n_tokens += take;
    budget -= take;
    ++i;
  }
  // Then the queue, in order, while nothing was preempted this step (a
  // preemption says the cache is full: admitting more would only thrash).
  int32_t slots = 0;
  for (const Sequence* s : running_) slots += s->slots();
  while (out->preempted.empty() && !waiting_.empty() && budget > 0) {
    // A batch takes new sequences up to its share of all there are, so the
    // batches stay even and a burst of prompts starts in one pass over them.
    if (config_.batches > 1 &&
        batch_size(batch) >= ((int32_t)(running_.size() + waiting_.size()) + config_.batches - 1) / config_.batches)
      break;
    Sequence* s = waiting_.front();
    if (slots + s->slots() > config_.max_num_seqs) break;
    // slo: one more sequence must leave the decode step within the TPOT target.
    if (slo && slots > 0 && cost_.predict_ms(slots + s->slots()) > kSloStepShare * config_.slo_tpot_ms) break;
    if (!admit(*s)) break;
    const int32_t take = chunk_for(*s, budget);
    if (take <= 0 || !try_reserve(*s, s->num_computed + take, &out->copies)) {
      release_blocks(*s);
      s->num_computed = 0;
      break;
    }
    waiting_.pop_front();
    add_running(s);
    s->batch = batch;
    slots += s->slots();
    out->seqs.push_back({s, s->num_computed, take, s->num_computed + take == (int32_t)s->tokens.size()});
    out->n_tokens += take;
    budget -= take;
  }
  return Status::ok();
}

void Scheduler::complete(const SchedulerOutput& out) {
  for (const ScheduledSeq& e : out.seqs) {
    Sequence& s = *e.seq;
    s.num_computed = e.start + e.n_tokens - e.proposed;
    if (prefix_ && s.holds_blocks) (void)prefix_->insert(s.id, s.tokens, s.num_computed);
  }
}

void Scheduler::accept_proposed(Sequence& s, int32_t accepted) {
  s.spec.proposal.clear();
  s.spec.draft_probs.clear();
  if (s.status == SeqStatus::finished || !s.holds_blocks) return;
  s.num_computed += accepted;
  // Roll back the rejected positions only where that empties a block: a
  // truncate makes the prefix cache walk the sequence again, and positions
  // past num_computed are rewritten before anything reads them.
  if (blocks_.blocks_for(s.num_computed) < blocks_.blocks_for(blocks_.length(s.id))) (void)blocks_.truncate(s.id, s.num_computed);
  if (prefix_ && accepted > 0) (void)prefix_->insert(s.id, s.tokens, s.num_computed);
}

}  // namespace tessera
