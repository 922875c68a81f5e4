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

Expected<std::unique_ptr<Session>> Session::create(ModelRunner& runner) {
  const SeqId id = g_next_seq++;
  TS_TRY(runner.blocks().add_sequence(id));
  return std::unique_ptr<Session>(new Session(runner, id));
}

Session::~Session() { runner_.blocks().release(id_); }

Status Session::feed(std::span<const int32_t> tokens, bool want_all) {
  const LlamaConfig& c = runner_.config();
  if (tokens.empty()) return invalid_argument("feed: no tokens");
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size)
      return out_of_range("token id " + std::to_string(tokens[i]) + " (at index " + std::to_string(i) +
                          ") is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
  const int64_t end = (int64_t)position_ + (int64_t)tokens.size();
  if (end > runner_.max_context())
    return out_of_range(std::to_string(position_) + " tokens in context plus " + std::to_string(tokens.size()) +
                        " new exceed the context length " + std::to_string(runner_.max_context()));
  BlockManager& bm = runner_.blocks();
  const int32_t before = bm.length(id_);
  TS_TRY(bm.reserve(id_, (int32_t)end));

  const int32_t vocab = c.vocab_size;
  const int32_t chunk = runner_.max_tokens_per_step();
  if (want_all) all_logits_.assign(tokens.size() * (size_t)vocab, 0.0f);
  block_table_.assign((size_t)runner_.max_blocks_per_seq(), 0);
  int32_t pos = position_;
  for (size_t start = 0; start < tokens.size(); start += (size_t)chunk) {
    const int32_t n = (int32_t)std::min<size_t>((size_t)chunk, tokens.size() - start);
    positions_.resize((size_t)n);
    slots_.resize((size_t)n);
    for (int32_t i = 0; i < n; ++i) {
      positions_[(size_t)i] = pos + i;
      slots_[(size_t)i] = bm.slot(id_, pos + i);
    }
    const bool last_chunk = start + (size_t)n == tokens.size();
    rows_.clear();
    if (want_all) {
      for (int32_t i = 0; i < n; ++i) rows_.push_back(i);
    } else if (last_chunk) {
      rows_.push_back(n - 1);
    }
    auto table = bm.block_table(id_);
    std::copy(table.begin(), table.end(), block_table_.begin());
    const int32_t query_start[2] = {0, n};
    const int32_t seq_len = pos + n;
    StepArgs a;
    a.token_ids = tokens.data() + start;
    a.positions = positions_.data();
    a.slot_mapping = slots_.data();
    a.n_tokens = n;
    a.query_start = query_start;
    a.seq_lens = &seq_len;
    a.block_tables = block_table_.data();
    a.n_seqs = 1;
    a.logit_rows = rows_.data();
    a.n_logit_rows = (int32_t)rows_.size();
    chunk_logits_.resize(rows_.size() * (size_t)vocab);
    Status st = runner_.step(a, chunk_logits_);
    if (!st.is_ok()) {
      // Give back what this call reserved: the sequence is as it was.
      if (before == 0) {
        bm.release(id_);
        (void)bm.add_sequence(id_);
      }
      return st;
    }
    if (want_all) std::copy(chunk_logits_.begin(), chunk_logits_.end(), all_logits_.begin() + (int64_t)start * vocab);
    if (last_chunk) last_logits_.assign(chunk_logits_.end() - vocab, chunk_logits_.end());
    pos += n;
  }
  position_ = pos;
  return Status::ok();
}

Expected<GenerateResult> generate(Session& s, std::span<const int32_t> prompt, const GenerateOptions& o,
                                  const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) return invalid_argument("prompt: at least one token (BOS) is needed");
  if (o.steps < 1) return invalid_argument("-n: must be at least 1, got " + std::to_string(o.steps));
  TS_TRY(validate(o.sampler));
  GenerateResult r;
  const auto t0 = std::chrono::steady_clock::now();
  const size_t fed = std::min<size_t>(prompt.size(), (size_t)o.steps);
  r.ids.assign(prompt.begin(), prompt.begin() + (int64_t)std::min(prompt.size(), fed + 1));
  TS_TRY(s.feed(prompt.first(fed)));
  r.metrics.prompt_tokens = (int64_t)fed;
  r.metrics.prefill_ms = ms_since(t0);
  if (fed < prompt.size()) return r;  // -n ended inside the prompt

  Sampler sampler(o.sampler);
  const int32_t bos = 1;
  const int32_t eos = s.runner().weights().tokenizer ? s.runner().weights().tokenizer->eos_id : 2;
  std::vector<float> logits;
  int32_t passes = (int32_t)fed;
  for (;;) {
    logits.assign(s.logits().begin(), s.logits().end());
    const int32_t next = sampler.sample(logits);
    if (r.metrics.generated_tokens == 0) r.metrics.ttft_ms = ms_since(t0);
    if ((o.stop_at_bos && next == bos) || (o.stop_at_eos && next == eos)) break;
    r.ids.push_back(next);
    ++r.metrics.generated_tokens;
    if (on_token && !on_token(next)) break;
    if (passes >= o.steps) break;
    const auto t_step = std::chrono::steady_clock::now();
    TS_TRY(s.feed(std::span<const int32_t>(&r.ids.back(), 1)));
    r.metrics.decode_ms += ms_since(t_step);
    ++r.metrics.decode_steps;
    ++passes;
  }
  return r;
}

}  // namespace tessera
