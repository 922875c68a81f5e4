#include "engine/serving/serving_engine.h"

#include <algorithm>
#include <chrono>
#include <functional>

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; }

// The model's identity for the prefix cache's hash chain: two engines over
// different weights must never share a block, and one over the same file
// always may.
uint64_t model_salt(const ModelWeights& w) {
  const TransformerConfig& c = w.config;
  const std::string id = w.source + "|" + std::to_string(w.total_bytes()) + "|" + std::to_string(c.dim) + "," +
                         std::to_string(c.n_layers) + "," + std::to_string(c.vocab_size);
  return std::hash<std::string>{}(id) | 1;
}

constexpr int32_t kMaxLogprobs = 20;  // as vLLM's default max_logprobs

}  // namespace

Expected<std::unique_ptr<ServingEngine>> ServingEngine::create(std::shared_ptr<const ModelWeights> weights, const Tokenizer* tokenizer,
                                                               RunnerOptions ro, const EngineConfig& config) {
  const SchedulerConfig& sc = config.scheduler;
  if (sc.max_num_seqs < 1) return invalid_argument("--max-num-seqs: must be >= 1, got " + std::to_string(sc.max_num_seqs));
  if (sc.max_num_batched_tokens < sc.max_num_seqs)
    return invalid_argument("--max-num-batched-tokens: must be >= --max-num-seqs (" + std::to_string(sc.max_num_seqs) + "), got " +
                            std::to_string(sc.max_num_batched_tokens));
  if (sc.max_prefill_chunk < 0)
    return invalid_argument("--max-prefill-chunk: must be >= 0 (0: no limit), got " + std::to_string(sc.max_prefill_chunk));
  if (sc.policy == SchedulePolicy::slo && !(sc.slo_ttft_ms > 0 && sc.slo_tpot_ms > 0))
    return invalid_argument("--schedule slo: needs --slo-ttft-ms and --slo-tpot-ms, both > 0");
  ro.max_seqs = sc.max_num_seqs;
  ro.max_prefill_tokens = sc.max_num_batched_tokens;
  ro.sample_on_device = true;
  TS_ASSIGN_OR_RETURN(RunnerWithCache r, open_runner(std::move(weights), ro));
  if (r.runner->max_tokens_per_step() < sc.max_num_seqs)
    return invalid_argument("--max-num-seqs: " + std::to_string(sc.max_num_seqs) + " sequences do not fit a step of " +
                            std::to_string(r.runner->max_tokens_per_step()) + " tokens (the context)");
  TS_TRY(tessera::validate(config.spec, r.runner->max_context()));
  TS_ASSIGN_OR_RETURN(std::unique_ptr<Proposer> proposer, make_proposer(config.spec, *r.runner, ro));
  return std::unique_ptr<ServingEngine>(new ServingEngine(std::move(r), std::move(proposer), tokenizer, config));
}

ServingEngine::ServingEngine(RunnerWithCache runner, std::unique_ptr<Proposer> proposer, const Tokenizer* tokenizer, const EngineConfig& config)
    : runner_(std::move(runner)), tokenizer_(tokenizer), config_(config), proposer_(std::move(proposer)) {
  config_.scheduler.max_num_batched_tokens = runner_.runner->max_tokens_per_step();
  if (const int32_t stages = runner_.runner->pipeline_stages(); stages > 1 && !proposer_ && config_.pipeline_batches != 1)
    config_.scheduler.batches = std::min<int32_t>(config_.pipeline_batches > 1 ? config_.pipeline_batches : stages, ModelRunner::kMaxInFlight);
  BlockManager& blocks = runner_.kv->blocks();
  if (config_.prefix_caching) prefix_ = std::make_unique<PrefixCache>(blocks, model_salt(runner_.runner->weights()));
  scheduler_ = std::make_unique<Scheduler>(config_.scheduler, blocks, prefix_.get());
  const ModelWeights& w = runner_.runner->weights();
  eos_ = tokenizer_ ? tokenizer_->eos_id() : (w.tokenizer ? w.tokenizer->eos_id : -1);
  metrics_.kv_blocks_total = blocks.num_blocks();
  metrics_.spec_method = name(proposer_ ? proposer_->method() : SpecMethod::none);
  for (size_t p = 0; p < runner_.kv->pools().size(); ++p) pool_index_.emplace(runner_.kv->pools()[p].name, p);
  thread_ = std::thread([this] { loop(); });
}

ServingEngine::~ServingEngine() {
  {
    std::lock_guard l(inbox_mu_);
    stopping_ = true;
  }
  inbox_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string ServingEngine::memory_summary() const {
  const KvCacheSpec& s = runner_.kv->spec();
  const int64_t tokens = (int64_t)s.num_blocks * s.block_size;
  const int32_t per_seq = runner_.runner->max_blocks_per_seq();
  char fits[32];
  std::snprintf(fits, sizeof fits, "%.1f", (double)s.num_blocks / (double)per_seq);
  return "kv cache: " + std::to_string(s.num_blocks) + " blocks x " + std::to_string(s.block_size) + " tokens = " +
         std::to_string(tokens) + " tokens of " + std::string(name(s.dtype)) + " K/V, " + mib(runner_.kv->bytes()) + "; " + fits + " sequences of the full " +
         std::to_string(runner_.runner->max_context()) + "-token context fit";
}

Status ServingEngine::validate(const Request& q) const {
  const int32_t vocab = runner_.runner->config().vocab_size;
  if (q.prompt.empty()) return invalid_argument("prompt: must hold at least one token");
  for (size_t i = 0; i < q.prompt.size(); ++i)
    if (q.prompt[i] < 0 || q.prompt[i] >= vocab)
      return out_of_range("prompt: token id " + std::to_string(q.prompt[i]) + " (at index " + std::to_string(i) +
                          ") is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  if (q.max_tokens < 1) return invalid_argument("max_tokens: must be >= 1, got " + std::to_string(q.max_tokens));
  if (q.n < 1 || q.n > config_.scheduler.max_num_seqs)
    return invalid_argument("n: must be in [1, " + std::to_string(config_.scheduler.max_num_seqs) + "] (--max-num-seqs), got " +
                            std::to_string(q.n));
  if (q.logprobs < -1 || q.logprobs > kMaxLogprobs)
    return invalid_argument("logprobs: must be in [0, " + std::to_string(kMaxLogprobs) + "] (or -1: none), got " + std::to_string(q.logprobs));
  TS_TRY(tessera::validate(q.sampling, vocab));
  for (int32_t t : q.stop_token_ids)
    if (t < 0 || t >= vocab)
      return out_of_range("stop_token_ids: token id " + std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  if (!q.stop.empty() && !(q.detokenize && tokenizer_)) return invalid_argument("stop: stop strings need a tokenizer and detokenize");
  TS_TRY(validate_stop_strings(q.stop));
  // The last token generated is never fed, so it needs no room: the
  // sequence holds at most prompt + max_tokens - 1 tokens.
  const int64_t held = (int64_t)q.prompt.size() + q.max_tokens - 1;
  const int32_t ctx = runner_.runner->max_context();
  if ((int64_t)q.prompt.size() > ctx)
    return out_of_range("prompt: " + std::to_string(q.prompt.size()) + " tokens exceed the context of " + std::to_string(ctx));
  if (held > ctx)
    return out_of_range("max_tokens: the prompt's " + std::to_string(q.prompt.size()) + " tokens plus " + std::to_string(q.max_tokens) +
                        " do not fit the context of " + std::to_string(ctx) + " (at most " +
                        std::to_string(ctx - (int64_t)q.prompt.size() + 1) + ")");
  const BlockManager& b = runner_.kv->blocks();
  if (b.blocks_for((int32_t)held) > b.num_blocks())
    return resource_exhausted("max_tokens: the prompt plus max_tokens need " + std::to_string(b.blocks_for((int32_t)held)) +
                              " KV blocks; the cache holds " + std::to_string(b.num_blocks()) + " (--kv-cache-memory)");
  return Status::ok();
}

Expected<std::shared_ptr<RequestState>> ServingEngine::submit(Request request, Delivery delivery, TokenCallback callback) {
  TS_TRY(validate(request));
  return enqueue(std::make_shared<RequestState>(0, std::move(request), delivery, std::move(callback)));
}

Expected<std::shared_ptr<RequestState>> ServingEngine::enqueue(std::shared_ptr<RequestState> r) {
  {
    std::lock_guard l(inbox_mu_);
    if (stopping_) return invalid_argument("engine: shutting down");
    r->set_id(next_request_++);
    inbox_.push_back(r);
  }
  inbox_cv_.notify_all();
  return r;
}

Expected<std::shared_ptr<RequestState>> ServingEngine::submit_prefill(Request request, KvExportFn on_chunk, Delivery delivery,
                                                                      TokenCallback callback) {
  TS_TRY(validate(request));
  if (!on_chunk) return invalid_argument("submit_prefill: no chunk hook");
  auto r = std::make_shared<RequestState>(0, std::move(request), delivery, std::move(callback));
  r->kv_export = std::move(on_chunk);
  r->first_sampled.resize((size_t)r->request().n);
  return enqueue(std::move(r));
}

Expected<std::shared_ptr<RequestState>> ServingEngine::submit_imported(Request request, KvImport import, Delivery delivery,
                                                                       TokenCallback callback) {
  TS_TRY(validate(request));
  TS_TRY(disagg::check_same_shape(disagg::kv_shape(*runner_.kv), import.payload.shape));
  if (import.payload.tokens != (int32_t)request.prompt.size())
    return invalid_argument("kv transfer: the K/V of " + std::to_string(import.payload.tokens) + " positions for a prompt of " +
                            std::to_string(request.prompt.size()) + " tokens");
  const uint64_t want = (uint64_t)import.payload.n_blocks * import.payload.shape.block_bytes_all_pools();
  if (import.payload.bytes.size() != want)
    return invalid_argument("kv transfer: " + std::to_string(import.payload.bytes.size()) + " bytes of K/V, expected " + std::to_string(want));
  if (import.first.size() != (size_t)request.n)
    return invalid_argument("kv transfer: first tokens for " + std::to_string(import.first.size()) + " sequences; the request's n is " +
                            std::to_string(request.n));
  const int32_t vocab = runner_.runner->config().vocab_size;
  for (const disagg::FirstToken& f : import.first) {
    if (f.token < 0 || f.token >= vocab)
      return out_of_range("kv transfer: first token " + std::to_string(f.token) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    // A stop token goes out without logprobs (it is not part of the text); any other carries them when asked.
    if (request.logprobs >= 0 && !is_stop_token(request, f.token) && !f.logprobs)
      return invalid_argument("kv transfer: the prefill worker sent the first token without the logprobs this request asks for");
    if (f.logprobs && (f.logprobs->chosen.token != f.token || (int32_t)f.logprobs->top.size() > std::max(request.logprobs, 0)))
      return invalid_argument("kv transfer: the first token's logprobs are for token " + std::to_string(f.logprobs->chosen.token) + " with " +
                              std::to_string(f.logprobs->top.size()) + " alternatives; expected token " + std::to_string(f.token) +
                              " with at most " + std::to_string(std::max(request.logprobs, 0)));
  }
  auto r = std::make_shared<RequestState>(0, std::move(request), delivery, std::move(callback));
  r->kv_import = std::make_unique<KvImport>(std::move(import));
  return enqueue(std::move(r));
}

void ServingEngine::cancel(RequestState& request) {
  request.request_cancel();
  {
    std::lock_guard l(inbox_mu_);
    cancels_pending_ = true;
  }
  inbox_cv_.notify_all();
}

EngineMetrics ServingEngine::metrics() const {
  std::lock_guard l(metrics_mu_);
  return metrics_;
}

bool ServingEngine::take_inbox(std::vector<std::shared_ptr<RequestState>>* fresh) {
  std::unique_lock l(inbox_mu_);
  if (live_.empty()) inbox_cv_.wait(l, [&] { return stopping_ || !inbox_.empty() || cancels_pending_; });
  if (stopping_) return false;
  fresh->swap(inbox_);
  cancels_pending_ = false;
  return true;
}

void ServingEngine::loop() {
  std::vector<std::shared_ptr<RequestState>> fresh;
  while (take_inbox(&fresh)) {
    for (auto& r : fresh) {
      if (r->kv_import) {
        live_.push_back(r);
        waiting_imports_.push_back(r);
      } else {
        start_request(r);
      }
    }
    fresh.clear();
    start_waiting_imports();
    cancel_requested();
    if (scheduler_->num_running() + scheduler_->num_waiting() > 0) {
      const Status st = run_step();
      if (!st.is_ok()) fail_all(st);
      if (config_.after_step) {
        size_t holding = 0;
        for (const auto& r : live_)
          for (const auto& s : r->seqs) holding += s->holds_blocks ? 1 : 0;
        config_.after_step({runner_.kv->blocks(), prefix_.get(), holding, scheduled_, flights_.size()});
      }
    }
    reap_finished();
  }
  // Stopping: the steps in flight are collected, then whatever was queued or running ends as cancelled.
  (void)drain_flights();
  {
    std::lock_guard l(inbox_mu_);
    for (auto& r : inbox_) live_.push_back(r);
    inbox_.clear();
  }
  for (auto& r : live_) {
    for (auto& s : r->seqs)
      if (s->status != SeqStatus::finished) finish_sequence(*s, FinishReason::cancelled, "engine: shut down");
    for (int32_t i = 0; i < std::max(1, r->request().n); ++i) r->finish(i, FinishReason::cancelled, "engine: shut down");
  }
  live_.clear();
}

void ServingEngine::start_request(const std::shared_ptr<RequestState>& r) {
  const Request& q = r->request();
  auto s = std::make_unique<Sequence>(next_seq_++, q.sampling);
  s->request = r.get();
  s->index = 0;
  s->tokens = q.prompt;
  s->prompt_len = (int32_t)q.prompt.size();
  s->forks_pending = q.n - 1;
  s->arrival = r->submitted();
  s->sampler.set_prompt(q.prompt);
  s->spec.k = AdaptiveK(config_.spec.max_k, config_.spec.adaptive);
  if (q.detokenize && tokenizer_) s->text = std::make_unique<SequenceText>(*tokenizer_, q.prompt, q.stop);
  scheduler_->add(s.get());
  r->seqs.push_back(std::move(s));
  live_.push_back(r);
}

void ServingEngine::start_waiting_imports() {
  std::erase_if(waiting_imports_, [&](const std::shared_ptr<RequestState>& r) {
    if (r->cancel_requested()) {
      r->kv_import.reset();
      r->finish(0, FinishReason::cancelled);
      return true;
    }
    return start_imported(r);
  });
}

bool ServingEngine::start_imported(const std::shared_ptr<RequestState>& r) {
  const Request& q = r->request();
  const int32_t n = (int32_t)q.prompt.size();
  BlockManager& blocks = runner_.kv->blocks();
  const SeqId id = next_seq_;
  // It joins the running set directly: only while a step has a sequence slot for each of its n.
  if ((int32_t)scheduler_->num_running() + q.n > config_.scheduler.max_num_seqs) return false;
  auto fail_all = [&](const std::string& why) {
    for (int32_t i = 0; i < q.n; ++i) r->finish(i, FinishReason::error, why);
  };
  if (blocks.blocks_needed(id, n) > blocks.available_blocks()) {
    // Blocks come back as running sequences finish; with none running they never will.
    if (scheduler_->num_running() + scheduler_->num_waiting() > 0) return false;
    r->kv_import.reset();
    fail_all("kv transfer: the KV cache cannot hold the imported prompt's " + std::to_string(blocks.blocks_for(n)) + " blocks");
    return true;
  }
  ++next_seq_;
  auto s = std::make_unique<Sequence>(id, q.sampling);
  s->request = r.get();
  s->tokens = q.prompt;
  s->prompt_len = n;
  s->arrival = r->submitted();
  s->sampler.set_prompt(q.prompt);
  s->sampler.set_rng_state(r->kv_import->first[0].rng_state);
  s->spec.k = AdaptiveK(config_.spec.max_k, config_.spec.adaptive);
  if (q.detokenize && tokenizer_) s->text = std::make_unique<SequenceText>(*tokenizer_, q.prompt, q.stop);
  Status st = blocks.add_sequence(id);
  if (st.is_ok()) st = blocks.reserve(id, n);
  // The payload into the blocks just allocated, pool by pool (every layer's K and V).
  const std::span<const int32_t> table = blocks.block_table(id);
  const disagg::KvPayload& payload = r->kv_import->payload;
  for (size_t p = 0; st.is_ok() && p < runner_.kv->pools().size(); ++p)
    st = disagg::write_pool_blocks(*runner_.runner, *runner_.kv, p, table, payload.blocks(p, 0, payload.n_blocks));
  const std::vector<disagg::FirstToken> first = std::move(r->kv_import->first);
  r->kv_import.reset();
  r->seqs.push_back(std::move(s));
  Sequence& seq = *r->seqs.back();
  if (!st.is_ok()) {
    blocks.release(id);
    seq.status = SeqStatus::finished;
    fail_all("kv transfer: " + st.message());
    return true;
  }
  seq.holds_blocks = true;
  seq.num_computed = n;
  r->note_scheduled();
  scheduler_->add_running(&seq);
  // n > 1: the other sequences fork the prompt's blocks here, as the
  // prefill worker's did after its last prompt step.
  seq.forks_pending = q.n - 1;
  if (seq.forks_pending > 0) fork_children(seq);
  // Each first token as if sampled here, with the draw stream the prefill
  // worker left: stop tokens, stop strings and max_tokens apply to it as to
  // any other.
  for (size_t i = 0; i < first.size(); ++i) {
    Sequence& si = *r->seqs[i];
    si.sampler.set_rng_state(first[i].rng_state);
    append_token(si, first[i].token, {}, first[i].logprobs ? &*first[i].logprobs : nullptr);
  }
  decode_passes_ += (int64_t)first.size();
  return true;
}

void ServingEngine::plan_exports(const SchedulerOutput& step) {
  exports_.clear();
  const int32_t bs = runner_.kv->spec().block_size;
  const BlockManager& blocks = runner_.kv->blocks();
  for (const ScheduledSeq& e : step.seqs) {
    Sequence& s = *e.seq;
    RequestState& r = *s.request;
    if (!r.kv_export || s.index != 0 || s.status == SeqStatus::finished || e.start >= s.prompt_len) continue;
    ChunkExport x;
    x.seq = &s;
    x.end = std::min(e.start + e.n_tokens, s.prompt_len);
    // From where the last hand-over stopped (a prefix-cache hit or a
    // preemption moves that back), through the block holding the chunk's end.
    const int32_t from = std::min(r.kv_exported_tokens, e.start);
    x.first_block = from / bs;
    const std::span<const int32_t> table = blocks.block_table(s.id);
    x.blocks.assign(table.begin() + x.first_block, table.begin() + (x.end - 1) / bs + 1);
    exports_.push_back(std::move(x));
  }
  if (!exports_.empty()) pool_handed_.assign(runner_.kv->pools().size(), 0);
}

// The step's thread, between two dispatches: `pool` holds this step's K or V.
void ServingEngine::on_kv_written(void* self, const char* pool) {
  auto& e = *static_cast<ServingEngine*>(self);
  const auto it = e.pool_index_.find(std::string_view(pool));
  if (it == e.pool_index_.end() || e.pool_handed_[it->second]) return;
  e.pool_handed_[it->second] = 1;
  e.hand_over({&it->second, 1});
  ++e.kv_exports_during_;
}

// Hands `pools`' blocks of every chunk of this step over.
void ServingEngine::hand_over(std::span<const size_t> pools) {
  for (ChunkExport& x : exports_) {
    if (!x.status.is_ok()) continue;
    const Sequence& s = *x.seq;
    const KvChunk chunk{*runner_.runner, *runner_.kv, x.blocks, x.first_block, x.end, s.prompt_len, pools};
    x.status = s.request->kv_export(chunk);
  }
}

void ServingEngine::export_chunks() {
  if (exports_.empty()) return;
  // The pools the step did not announce (every one, on a device that announces none).
  std::vector<size_t> rest;
  for (size_t p = 0; p < pool_handed_.size(); ++p)
    if (!pool_handed_[p]) rest.push_back(p);
  if (!rest.empty()) hand_over(rest);
  kv_exports_after_ += (int64_t)rest.size();
  for (ChunkExport& x : exports_) {
    if (!x.status.is_ok()) {
      finish_sequence(*x.seq, FinishReason::error, x.status.message());
      continue;
    }
    x.seq->request->kv_exported_tokens = x.end;
  }
  exports_.clear();
}

void ServingEngine::cancel_requested() {
  bool deferred = false;
  for (auto& r : live_) {
    if (!r->cancel_requested()) continue;
    for (auto& s : r->seqs) {
      // A sequence with a step in flight ends when the step is collected
      // (its blocks are being written): the next pass of the loop.
      if (s->in_flight) {
        deferred = true;
        continue;
      }
      if (s->status != SeqStatus::finished) finish_sequence(*s, FinishReason::cancelled);
    }
  }
  if (deferred) {
    std::lock_guard l(inbox_mu_);
    cancels_pending_ = true;
  }
}

void ServingEngine::finish_sequence(Sequence& s, FinishReason reason, std::string error) {
  scheduler_->remove(&s);
  // Sequences not forked yet end with their parent.
  for (int32_t i = 1; i <= s.forks_pending; ++i) s.request->finish(s.index + i, reason, error);
  s.forks_pending = 0;
  s.request->finish(s.index, reason, std::move(error));
}

void ServingEngine::fail_all(const Status& st) {
  for (auto& r : live_)
    for (auto& s : r->seqs)
      if (s->status != SeqStatus::finished) finish_sequence(*s, FinishReason::error, st.message());
}

bool ServingEngine::needs_logits(const Sequence& s) const {
  const Request& q = s.request->request();
  const SamplerParams& p = q.sampling;
  return p.temperature != 0 || p.presence_penalty != 0 || p.frequency_penalty != 0 || p.repetition_penalty != 1 ||
         !p.logit_bias.empty() || q.logprobs >= 0 || !runner_.runner->samples_on_device();
}

void ServingEngine::fork_children(Sequence& parent) {
  RequestState& r = *parent.request;
  const Request& q = r.request();
  BlockManager& blocks = runner_.kv->blocks();
  for (int32_t i = 1; i <= parent.forks_pending; ++i) {
    SamplerParams p = q.sampling;
    p.seed = q.sampling.seed + (uint64_t)i;
    auto c = std::make_unique<Sequence>(next_seq_++, p);
    c->request = &r;
    c->index = parent.index + i;
    c->tokens = parent.tokens;
    c->prompt_len = parent.prompt_len;
    c->num_computed = parent.num_computed;
    c->arrival = parent.arrival;
    c->sampler.set_prompt(q.prompt);
    c->spec.k = AdaptiveK(config_.spec.max_k, config_.spec.adaptive);
    if (parent.text) c->text = std::make_unique<SequenceText>(*tokenizer_, q.prompt, q.stop);
    // The prompt's blocks are shared; the first write into the shared last
    // block copies it (the BlockManager's copy-on-write, run by the runner).
    if (blocks.fork(parent.id, c->id).is_ok()) {
      c->holds_blocks = true;
      scheduler_->add_running(c.get());
    } else {
      scheduler_->add(c.get());  // cannot happen (fresh id), but then it recomputes
    }
    r.seqs.push_back(std::move(c));
  }
  parent.forks_pending = 0;
}

bool ServingEngine::is_stop_token(const Request& q, int32_t token) const {
  return std::find(q.stop_token_ids.begin(), q.stop_token_ids.end(), token) != q.stop_token_ids.end() || (!q.ignore_eos && token == eos_);
}

void ServingEngine::append_token(Sequence& s, int32_t token, std::span<const float> logits, const disagg::FirstLogprobs* given) {
  const Request& q = s.request->request();
  TokenOutput ev;
  ev.index = s.index;
  if (is_stop_token(q, token)) {
    if (s.text) ev.text = s.text->finish();
    ev.finish = FinishReason::stop;
  } else {
    s.tokens.push_back(token);
    s.sampler.accept(token);
    ev.token = token;
    if (q.logprobs >= 0 && !logits.empty()) compute_logprobs(logits, token, q.logprobs, &ev.logprob, &ev.top_logprobs);
    if (q.logprobs >= 0 && given) {
      ev.logprob = given->chosen;
      ev.top_logprobs = given->top;
    }
    if (q.logprobs >= 0 && s.request->kv_export && s.generated() == 1)  // what the decode worker emits with it
      s.request->first_sampled.at((size_t)s.index).logprobs = disagg::FirstLogprobs{ev.logprob, ev.top_logprobs};
    if (s.text) {
      SequenceText::Delta d = s.text->push(token);
      ev.text = std::move(d.text);
      if (d.stopped) ev.finish = FinishReason::stop;
    }
    if (ev.finish == FinishReason::none &&
        (s.generated() >= q.max_tokens || (int32_t)s.tokens.size() > runner_.runner->max_context())) {
      ev.finish = FinishReason::length;
      if (s.text) ev.text += s.text->finish();
    }
  }
  const FinishReason finish = ev.finish;
  if (ev.token >= 0) ++tokens_generated_;
  if (finish != FinishReason::none) scheduler_->remove(&s);
  s.request->emit(std::move(ev));
}

void ServingEngine::sample_row(Sequence& s, std::span<const float> logits, int32_t device_token) {
  int32_t token = device_token;
  if (needs_logits(s)) {
    std::vector<float>& scratch = sample_scratch_;
    scratch.assign(logits.begin(), logits.end());
    token = s.sampler.sample(scratch);
  }
  if (s.request->kv_export && s.generated() == 0) {
    // What the decode worker continues from.
    disagg::FirstToken& f = s.request->first_sampled.at((size_t)s.index);
    f.token = token;
    f.rng_state = s.sampler.rng_state();
  }
  append_token(s, token, logits);
}

Status ServingEngine::propose() {
  if (!proposer_) return Status::ok();
  const std::vector<double>& cost = spec_costs();
  const int32_t ctx = runner_.runner->max_context();
  propose_items_.clear();
  for (const auto& r : live_) {
    const Request& q = r->request();
    for (const auto& sp : r->seqs) {
      Sequence& s = *sp;
      s.spec.proposal.clear();
      s.spec.draft_probs.clear();
      if (s.status != SeqStatus::running || s.pending() != 1 || s.forks_pending > 0) continue;
      if (proposer_->greedy_only() && s.sampler.params().temperature != 0.0f) continue;
      // Never past what the sequence may still emit (a pass emits at most
      // k + 1 tokens) or past the context (positions up to L - 1 + k are fed).
      const int32_t k = std::min({s.spec.k.next(cost), q.max_tokens - s.generated() - 1, ctx - (int32_t)s.tokens.size()});
      if (k > 0) propose_items_.push_back({&s, k});
    }
  }
  if (propose_items_.empty()) return Status::ok();
  const auto t0 = Clock::now();
  const Status st = proposer_->propose(propose_items_);
  propose_ms_ += ms_between(t0, Clock::now());
  return st;
}

const std::vector<double>& ServingEngine::spec_costs() {
  // Until the step cost line is fitted, assume a decode step is bound by
  // reading the weights, so a few more tokens add little.
  constexpr double kUnfitted = 0.05;
  const StepCostModel& c = scheduler_->step_cost();
  const double round = proposer_ ? proposer_->round_ms() : 0;
  const int32_t n = std::max<int32_t>(1, (int32_t)scheduler_->num_running());
  spec_costs_.resize((size_t)std::max(config_.spec.max_k, 0) + 1);
  // The step's time at the bucket its n (1 + k) tokens run in.
  auto step_ms = [&](int32_t tokens) { return c.predict_ms(runner_.runner->token_bucket(tokens)); };
  for (size_t k = 0; k < spec_costs_.size(); ++k) {
    if (!c.ready()) {
      spec_costs_[k] = 1.0 + (kUnfitted + (round > 0 ? 0.2 : 0.0)) * (double)k;
      continue;
    }
    spec_costs_[k] = (step_ms(n * (1 + (int32_t)k)) + round * (double)k) / step_ms(n);
  }
  return spec_costs_;
}

void ServingEngine::sample_rows(const ScheduledSeq& e, const StepResult& result, size_t row) {
  Sequence& s = *e.seq;
  const size_t vocab = (size_t)runner_.runner->config().vocab_size;
  std::span<const float> logits;
  if (!result.logits.empty()) logits = result.logits.subspan(row * vocab, vocab);
  const int32_t device_token = result.tokens.empty() ? -1 : result.tokens[row];
  RequestState& r = *s.request;
  const size_t first_child = r.seqs.size();
  const bool forks = s.forks_pending > 0;
  if (forks) fork_children(s);
  sample_row(s, logits, device_token);
  if (forks)
    for (size_t c = first_child; c < r.seqs.size(); ++c) sample_row(*r.seqs[c], logits, device_token);
  decode_passes_ += (int64_t)(r.seqs.size() - first_child);  // each fork's first token is a pass of its own
}

void ServingEngine::verify_proposal(const ScheduledSeq& e, const StepResult& result, size_t first_row) {
  Sequence& s = *e.seq;
  const size_t vocab = (size_t)runner_.runner->config().vocab_size;
  choices_.clear();
  int32_t accepted = 0;
  bool decided = false;
  for (int32_t i = 0; i <= e.proposed; ++i) {
    const size_t row = first_row + (size_t)i;
    VerifyRow v;
    if (!result.logits.empty()) v.logits = result.logits.subspan(row * vocab, vocab);
    v.device_token = result.tokens.empty() ? -1 : result.tokens[row];
    if (decided) {
      if (!proposer_->wants_every_choice()) break;
      // Past the first rejection: the target's greedy outputs are the next
      // Jacobi guesses, nothing more.
      choices_.push_back(v.device_token >= 0 ? v.device_token
                                             : (int32_t)(std::max_element(v.logits.begin(), v.logits.end()) - v.logits.begin()));
      continue;
    }
    if (i < e.proposed) {
      v.proposal = s.spec.proposal[(size_t)i];
      if (s.spec.draft_probs.size() >= ((size_t)i + 1) * vocab) v.q = std::span<const float>(s.spec.draft_probs).subspan((size_t)i * vocab, vocab);
    }
    const RowVerdict verdict =
        verify_row(s.sampler, v, verify_scratch_, config_.spec.wrong_rule_for_tests ? AcceptRule::resample_target : AcceptRule::leviathan);
    choices_.push_back(verdict.token);
    append_token(s, verdict.token, v.logits);
    if (verdict.accepted) ++accepted;
    decided = !verdict.accepted || s.status == SeqStatus::finished;
  }
  ++spec_passes_;
  spec_proposed_ += e.proposed;
  spec_accepted_ += accepted;
  s.spec.k.observe(e.proposed, accepted);
  scheduler_->accept_proposed(s, accepted);
  if (s.status != SeqStatus::finished) proposer_->verified(s, choices_, accepted);
}

Status ServingEngine::run_step() {
  if (scheduler_->config().batches > 1 && !exporting()) return run_batches();
  TS_TRY(drain_flights());  // a step that exports runs alone
  TS_TRY(propose());
  const auto t_proposed = Clock::now();
  TS_TRY(scheduler_->schedule(&scheduled_));
  Flight f;
  f.out = std::move(scheduled_);
  if (!prepare_step(f)) {
    scheduled_ = std::move(f.out);
    // Nothing can run although sequences wait: submit's checks make this
    // unreachable; fail the head rather than spin.
    return resource_exhausted("engine: no sequence can be scheduled (the KV cache cannot hold the next one)");
  }
  plan_exports(f.out);
  // A device that says when each pool is written lets a prompt's KV leave
  // layer by layer while the step's later layers compute.
  if (!exports_.empty()) f.req.args.kv_written = {&ServingEngine::on_kv_written, this};
  f.t_proposed = t_proposed;
  f.t_step = Clock::now();
  TS_ASSIGN_OR_RETURN(f.ticket, runner_.runner->submit(f.req));
  TS_ASSIGN_OR_RETURN(const StepResult result, runner_.runner->collect(f.ticket));
  finish_step(f, result);
  scheduled_ = std::move(f.out);
  return Status::ok();
}

bool ServingEngine::exporting() const {
  for (const auto& r : live_)
    if (r->kv_export) return true;
  return false;
}

// The step's bookkeeping before it runs: notes on the requests, the step's
// arrays, what it returns. False for an empty step.
bool ServingEngine::prepare_step(Flight& f) {
  for (Sequence* p : f.out.preempted) p->request->note_preempted();
  if (f.out.empty()) return false;
  bool any_logits = false, any_tokens = false;
  for (const ScheduledSeq& e : f.out.seqs) {
    Sequence& s = *e.seq;
    s.request->note_scheduled();
    if (s.index == 0 && e.start > 0 && s.generated() == 0) s.request->note_cached_prompt(e.start);
    if (!e.samples) continue;
    // Forks sample from their parent's row with the same parameters.
    any_logits |= needs_logits(s);
    any_tokens |= !needs_logits(s);
  }
  const BlockManager& blocks = runner_.kv->blocks();
  f.blocks_held = blocks.num_blocks() - blocks.available_blocks();  // the step's peak: before finished sequences let go
  batch_.build(f.out, blocks, runner_.runner->max_blocks_per_seq());
  f.req = StepRequest{};
  f.req.args = batch_.args();
  f.req.block_copies = f.out.copies;
  f.req.outputs = any_logits && any_tokens ? StepOutputs::both : any_tokens ? StepOutputs::tokens : StepOutputs::logits;
  return true;
}

// After the step ran: its tokens computed, its rows sampled or verified.
void ServingEngine::finish_step(const Flight& f, const StepResult& result) {
  const auto t_done = Clock::now();
  scheduler_->complete(f.out);
  scheduler_->observe_step(f.out.n_tokens, ms_between(f.t_step, t_done));
  export_chunks();

  // Each sampling sequence's rows are consecutive, in the step's order.
  size_t row = 0;
  for (const ScheduledSeq& e : f.out.seqs) {
    if (!e.samples) continue;
    if (e.seq->status == SeqStatus::finished) {  // its export failed
      row += (size_t)e.rows;
      continue;
    }
    ++decode_passes_;
    if (e.proposed > 0) {
      verify_proposal(e, result, row);
    } else {
      sample_rows(e, result, row);
    }
    row += (size_t)e.rows;
  }
  const auto t_end = Clock::now();
  update_metrics(ms_between(f.t_step, t_done), ms_between(f.t_proposed, f.t_step) + ms_between(t_done, t_end), f.out.n_tokens,
                 f.blocks_held);
}

// Pipeline parallelism's independent batches (docs/parallelism.md): every
// batch without a step in flight gets one submitted, so the first stage
// computes one batch's step while the later stages compute another's; then
// the oldest step is collected and sampled. The runner holds
// ModelRunner::kMaxInFlight steps, so batches <= that (the engine sets it).
Status ServingEngine::run_batches() {
  const int32_t n = scheduler_->config().batches;
  for (int32_t i = 0; i < n && (int32_t)flights_.size() < n; ++i) {
    const int32_t b = (next_batch_ + i) % n;
    bool busy = false;
    for (const Flight& f : flights_) busy |= f.batch == b;
    if (busy) continue;
    Flight f;
    f.batch = b;
    f.t_proposed = Clock::now();
    TS_TRY(scheduler_->schedule(&f.out, f.t_proposed, b));
    if (!prepare_step(f)) continue;
    f.t_step = Clock::now();
    const Expected<StepTicket> ticket = runner_.runner->submit(f.req);
    if (!ticket.has_value()) {
      (void)drain_flights();
      return ticket.status();
    }
    f.ticket = *ticket;
    for (const ScheduledSeq& e : f.out.seqs) e.seq->in_flight = true;
    flights_.push_back(std::move(f));
  }
  if (flights_.empty()) return resource_exhausted("engine: no sequence can be scheduled (the KV cache cannot hold the next one)");
  next_batch_ = (flights_.back().batch + 1) % n;
  Flight f;
  const Expected<StepResult> result = collect_oldest(f);
  if (!result.has_value()) {
    (void)drain_flights();
    return result.status();
  }
  finish_step(f, *result);
  scheduled_ = std::move(f.out);
  return Status::ok();
}

// Takes the oldest step in flight off the queue into f (its sequences no
// longer in flight) and collects it.
Expected<StepResult> ServingEngine::collect_oldest(Flight& f) {
  f = std::move(flights_.front());
  flights_.pop_front();
  for (const ScheduledSeq& e : f.out.seqs) e.seq->in_flight = false;
  return runner_.runner->collect(f.ticket);
}

// Collects every step still in flight and applies it (the loop's end, a
// change to one batch, or an error: the first error is returned, the rest
// are collected regardless).
Status ServingEngine::drain_flights() {
  Status first = Status::ok();
  while (!flights_.empty()) {
    Flight f;
    const Expected<StepResult> result = collect_oldest(f);
    if (result.has_value() && first.is_ok()) {
      finish_step(f, *result);
    } else if (first.is_ok()) {
      first = result.status();
    }
  }
  return first;
}

void ServingEngine::reap_finished() {
  std::erase_if(live_, [&](const std::shared_ptr<RequestState>& r) {
    if (!r->done()) return false;
    for (const auto& sp : r->seqs)
      if (sp->in_flight) return false;  // a step in flight still names it: reaped after it is collected
    if (proposer_)
      for (auto& sp : r->seqs) proposer_->forget(*sp);
    r->seqs.clear();  // their samplers' buffers go now, not when the caller drops the handle
    ++requests_finished_;
    return true;
  });
  const BlockManager& b = runner_.kv->blocks();
  std::lock_guard l(metrics_mu_);
  EngineMetrics& m = metrics_;
  m.running = (int32_t)scheduler_->num_running();
  m.waiting = (int32_t)scheduler_->num_waiting();
  m.kv_blocks_used = b.num_blocks() - b.available_blocks();
  m.kv_blocks_cached = b.available_blocks() - b.free_blocks();
  m.kv_blocks_peak = std::max(m.kv_blocks_peak, m.kv_blocks_used);
  m.requests_finished = requests_finished_;
  m.tokens_generated = tokens_generated_;
}

void ServingEngine::update_metrics(double step_ms, double host_ms, int32_t step_tokens, int32_t blocks_held) {
  std::lock_guard l(metrics_mu_);
  EngineMetrics& m = metrics_;
  m.kv_blocks_peak = std::max(m.kv_blocks_peak, blocks_held);
  if (prefix_) {
    const PrefixCacheStats& st = prefix_->stats();
    m.prefix_queries = st.queries;
    m.prefix_query_tokens = st.query_tokens;
    m.prefix_hit_tokens = st.hit_tokens;
    m.prefix_evictions = st.evictions;
  }
  m.preemptions = scheduler_->preemptions();
  m.tokens_generated = tokens_generated_;
  ++m.steps;
  m.step_tokens += step_tokens;
  m.step_ms += step_ms;
  m.host_ms += host_ms;
  m.decode_passes = decode_passes_;
  m.spec_proposed = spec_proposed_;
  m.spec_accepted = spec_accepted_;
  m.spec_passes = spec_passes_;
  m.spec_draft_fed_tokens = proposer_ ? proposer_->fed_tokens() : 0;
  m.spec_draft_forked_tokens = proposer_ ? proposer_->forked_tokens() : 0;
  m.propose_ms = propose_ms_;
  m.kv_exports_during_step = kv_exports_during_;
  m.kv_exports_after_step = kv_exports_after_;
}

}  // namespace tessera
