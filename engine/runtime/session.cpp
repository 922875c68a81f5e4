#include "engine/runtime/session.h"

#include <atomic>
#include <chrono>
#include <string>

namespace tessera {

namespace {
std::atomic<SeqId> g_next_seq{1};
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Expected<std::unique_ptr<Session>> Session::create(ModelRunner& runner, KvCache& kv) {
  const SeqId id = g_next_seq++;
  TS_TRY(kv.blocks().add_sequence(id));
  return std::unique_ptr<Session>(new Session(runner, kv, id));
}

Session::~Session() {
  // A chunk still in flight writes into blocks about to be freed: wait for it.
  for (Chunk& c : chunks_)
    if (c.ticket) (void)runner_.collect(c.ticket);
  kv_.blocks().release(id_);
}

Expected<std::unique_ptr<Session>> Session::fork() const {
  const SeqId id = g_next_seq++;
  TS_TRY(kv_.blocks().fork(id_, id));
  std::unique_ptr<Session> s(new Session(runner_, kv_, id));
  s->position_ = position_;
  s->greedy_token_ = greedy_token_;
  s->last_logits_ = last_logits_;
  return s;
}

Status Session::feed(std::span<const int32_t> tokens, bool want_all) {
  return run(tokens, want_all ? Want::all_logits : Want::last_logits);
}

Status Session::feed_greedy(std::span<const int32_t> tokens) {
  if (!runner_.samples_on_device()) return invalid_argument("feed_greedy: the runner does not sample on the device");
  return run(tokens, Want::greedy_token);
}

Status Session::collect(Chunk& c, Want want, bool last, size_t total) {
  const StepTicket t = c.ticket;
  c.ticket = 0;
  TS_ASSIGN_OR_RETURN(const StepResult r, runner_.collect(t));
  const size_t vocab = (size_t)runner_.config().vocab_size;
  if (want == Want::all_logits) {
    if (all_logits_.size() != total * vocab) all_logits_.assign(total * vocab, 0.0f);
    std::copy(r.logits.begin(), r.logits.end(), all_logits_.begin() + (ptrdiff_t)(c.start * vocab));
  }
  if (!last) return Status::ok();
  if (want == Want::greedy_token) {
    greedy_token_ = r.tokens.back();
    last_logits_.clear();
  } else {
    last_logits_.assign(r.logits.end() - (ptrdiff_t)vocab, r.logits.end());
  }
  return Status::ok();
}

Status Session::run(std::span<const int32_t> tokens, Want want) {
  const TransformerConfig& c = runner_.config();
  if (tokens.empty()) return invalid_argument("feed: no tokens");
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size)
      return out_of_range("token id " + std::to_string(tokens[i]) + " (at index " + std::to_string(i) +
                          ") is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
  const int64_t end = (int64_t)position_ + (int64_t)tokens.size();
  if (end > runner_.max_context())
    return out_of_range(std::to_string(position_) + " tokens in context plus " + std::to_string(tokens.size()) +
                        " new exceed the context length " + std::to_string(runner_.max_context()));
  BlockManager& bm = kv_.blocks();
  const int32_t before = bm.length(id_);
  copies_.clear();
  TS_TRY(bm.reserve(id_, (int32_t)end, &copies_));

  const int32_t step_tokens = runner_.max_tokens_per_step();
  const size_t n_chunks = (tokens.size() + (size_t)step_tokens - 1) / (size_t)step_tokens;
  Status st;
  size_t submitted = 0, collected = 0;
  // Chunks go in order, at most kMaxInFlight at once: the host fills chunk
  // k+1's arrays while chunk k runs.
  while (collected < n_chunks && st.is_ok()) {
    if (submitted < n_chunks && submitted - collected < (size_t)ModelRunner::kMaxInFlight) {
      Chunk& ch = chunks_[submitted % ModelRunner::kMaxInFlight];
      ch.start = submitted * (size_t)step_tokens;
      const int32_t n = (int32_t)std::min<size_t>((size_t)step_tokens, tokens.size() - ch.start);
      const int32_t pos = position_ + (int32_t)ch.start;
      const bool last = submitted + 1 == n_chunks;
      ch.positions.resize((size_t)n);
      ch.slots.resize((size_t)n);
      for (int32_t i = 0; i < n; ++i) {
        ch.positions[(size_t)i] = pos + i;
        ch.slots[(size_t)i] = bm.slot(id_, pos + i);
      }
      ch.rows.clear();
      if (want == Want::all_logits) {
        for (int32_t i = 0; i < n; ++i) ch.rows.push_back(i);
      } else if (last) {
        ch.rows.push_back(n - 1);
      }
      const auto table = bm.block_table(id_);
      ch.block_table.assign((size_t)runner_.max_blocks_per_seq(), 0);
      std::copy(table.begin(), table.end(), ch.block_table.begin());
      ch.query_start[1] = n;
      ch.seq_len = pos + n;
      StepRequest req;
      StepArgs& a = req.args;
      a.token_ids = tokens.data() + ch.start;
      a.positions = ch.positions.data();
      a.slot_mapping = ch.slots.data();
      a.n_tokens = n;
      a.query_start = ch.query_start;
      a.seq_lens = &ch.seq_len;
      a.block_tables = ch.block_table.data();
      a.n_seqs = 1;
      a.logit_rows = ch.rows.data();
      a.n_logit_rows = (int32_t)ch.rows.size();
      // Copy-on-write goes before the first chunk writes.
      if (submitted == 0) req.block_copies = copies_;
      req.outputs = want == Want::greedy_token && last ? StepOutputs::tokens : StepOutputs::logits;
      auto t = runner_.submit(req);
      if (!t) {
        st = t.status();
        break;
      }
      ch.ticket = *t;
      ++submitted;
      continue;
    }
    Chunk& ch = chunks_[collected % ModelRunner::kMaxInFlight];
    st = collect(ch, want, collected + 1 == n_chunks, tokens.size());
    ++collected;
  }
  // On failure: collect what is still in flight, and give back what this call reserved.
  for (Chunk& ch : chunks_)
    if (ch.ticket) {
      (void)runner_.collect(ch.ticket);
      ch.ticket = 0;
    }
  if (!st.is_ok()) {
    if (before == 0) {
      bm.release(id_);
      (void)bm.add_sequence(id_);
    } else {
      (void)bm.truncate(id_, before);
    }
    return st;
  }
  position_ = (int32_t)end;
  return Status::ok();
}

Expected<GenerateResult> generate(Session& s, std::span<const int32_t> prompt, const GenerateOptions& o,
                                  const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) return invalid_argument("prompt: at least one token (BOS) is needed");
  if (o.steps < 1) return invalid_argument("-n: must be at least 1, got " + std::to_string(o.steps));
  TS_TRY(validate(o.sampler, s.runner().config().vocab_size));
  GenerateResult r;
  const auto t0 = std::chrono::steady_clock::now();
  const size_t fed = std::min<size_t>(prompt.size(), (size_t)o.steps);
  r.ids.assign(prompt.begin(), prompt.begin() + (int64_t)std::min(prompt.size(), fed + 1));
  // Greedy decoding with a runner that samples on the device: each step hands
  // back one id instead of the vocabulary's logits.
  // (Not when the logits are adjusted first: the device takes the raw argmax.)
  const bool device_greedy =
      o.sampler.temperature == 0.0f && !adjusts_logits(o.sampler) && s.runner().samples_on_device();
  auto feed = [&](std::span<const int32_t> t) { return device_greedy ? s.feed_greedy(t) : s.feed(t); };
  TS_TRY(feed(prompt.first(fed)));
  r.metrics.prompt_tokens = (int64_t)fed;
  r.metrics.prefill_ms = ms_since(t0);
  if (fed < prompt.size()) return r;  // -n ended inside the prompt

  Sampler sampler(o.sampler);
  sampler.set_prompt(prompt);
  const int32_t bos = 1;
  const int32_t eos = s.runner().weights().tokenizer ? s.runner().weights().tokenizer->eos_id : 2;
  std::vector<float> logits;
  int32_t passes = (int32_t)fed;
  for (;;) {
    int32_t next = s.greedy_token();
    if (!device_greedy) {
      logits.assign(s.logits().begin(), s.logits().end());
      next = sampler.sample(logits);
    }
    if (r.metrics.generated_tokens == 0) r.metrics.ttft_ms = ms_since(t0);
    if ((o.stop_at_bos && next == bos) || (o.stop_at_eos && next == eos)) break;
    r.ids.push_back(next);
    sampler.accept(next);
    ++r.metrics.generated_tokens;
    if (on_token && !on_token(next)) break;
    if (passes >= o.steps) break;
    const auto t_step = std::chrono::steady_clock::now();
    TS_TRY(feed(std::span<const int32_t>(&r.ids.back(), 1)));
    r.metrics.decode_ms += ms_since(t_step);
    ++r.metrics.decode_steps;
    ++passes;
  }
  return r;
}

}  // namespace tessera
