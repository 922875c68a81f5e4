#pragma once
// Sequences run through a ModelRunner as a continuous-batching engine runs
// them: each step carries the next chunk (up to a limit) of every sequence
// that has joined and not finished, sequences joining at different steps and
// leaving when done; every token's logits come back. For the batch-invariance
// tests (docs/backends.md, "Batch invariance"): a token's logits must be the
// same bits whoever shares its steps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "engine/bench/synthetic_model.h"
#include "engine/models/load_model.h"
#include "engine/runtime/model_runner.h"
#include "support/random.h"

namespace tessera::testing {

struct MixedSequence {
  std::vector<int32_t> ids;  // fed in order
  int32_t join_step = 0;     // the first step it may take part in
};

// Fresh random sequences of these lengths, joining at these steps.
inline std::vector<MixedSequence> random_sequences(const std::vector<int32_t>& lengths, const std::vector<int32_t>& joins,
                                                   int32_t vocab, Rng& rng) {
  std::vector<MixedSequence> out;
  for (size_t i = 0; i < lengths.size(); ++i) {
    MixedSequence s;
    for (int32_t j = 0; j < lengths[i]; ++j) s.ids.push_back(rng.integer(0, vocab - 1));
    s.join_step = joins[i];
    out.push_back(std::move(s));
  }
  return out;
}

// Runs `seqs` as above with at most chunk_limit tokens of a sequence per step
// (and at most what a step of the runner holds); ids from first_id on. Each
// sequence's result holds one row of vocab logits per id: those after it.
inline std::vector<std::vector<float>> run_mixed(ModelRunner& r, KvCache& kv, const std::vector<MixedSequence>& seqs,
                                                 int32_t chunk_limit, SeqId first_id) {
  const int32_t vocab = r.config().vocab_size;
  std::vector<std::vector<float>> logits(seqs.size());
  std::vector<int32_t> fed(seqs.size(), 0);
  std::vector<bool> joined(seqs.size(), false);
  for (int32_t step = 0;; ++step) {
    std::vector<int32_t> tokens, positions, slots, query_start = {0}, seq_lens, tables, logit_rows;
    std::vector<BlockCopy> copies;
    std::vector<std::pair<size_t, int32_t>> members;  // (sequence, tokens this step)
    bool pending = false;
    for (size_t s = 0; s < seqs.size(); ++s) {
      const int32_t left = (int32_t)seqs[s].ids.size() - fed[s];
      if (left == 0) continue;
      pending = true;
      const int32_t room = r.max_tokens_per_step() - (int32_t)tokens.size();
      if (step < seqs[s].join_step || room == 0 || (int32_t)members.size() == r.max_seqs()) continue;
      const SeqId id = first_id + (SeqId)s;
      if (!joined[s]) {
        REQUIRE(kv.blocks().add_sequence(id).is_ok());
        joined[s] = true;
      }
      const int32_t n = std::min({chunk_limit, left, room});
      REQUIRE(kv.blocks().reserve(id, fed[s] + n, &copies).is_ok());
      for (int32_t i = 0; i < n; ++i) {
        tokens.push_back(seqs[s].ids[(size_t)(fed[s] + i)]);
        positions.push_back(fed[s] + i);
        slots.push_back(kv.blocks().slot(id, fed[s] + i));
        logit_rows.push_back((int32_t)tokens.size() - 1);
      }
      query_start.push_back((int32_t)tokens.size());
      seq_lens.push_back(fed[s] + n);
      const auto table = kv.blocks().block_table(id);
      std::vector<int32_t> row((size_t)r.max_blocks_per_seq(), 0);
      std::copy(table.begin(), table.end(), row.begin());
      tables.insert(tables.end(), row.begin(), row.end());
      members.push_back({s, n});
    }
    if (!pending) break;
    if (members.empty()) continue;  // nobody has joined yet
    StepArgs a;
    a.token_ids = tokens.data();
    a.positions = positions.data();
    a.slot_mapping = slots.data();
    a.n_tokens = (int32_t)tokens.size();
    a.query_start = query_start.data();
    a.seq_lens = seq_lens.data();
    a.block_tables = tables.data();
    a.n_seqs = (int32_t)members.size();
    a.logit_rows = logit_rows.data();
    a.n_logit_rows = (int32_t)logit_rows.size();
    std::vector<float> out(logit_rows.size() * (size_t)vocab);
    const Status st = r.step(a, out, copies);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    size_t row = 0;
    for (const auto& [s, n] : members) {
      logits[s].insert(logits[s].end(), out.begin() + (ptrdiff_t)(row * vocab), out.begin() + (ptrdiff_t)((row + n) * vocab));
      row += (size_t)n;
      fed[s] += n;
      if (fed[s] == (int32_t)seqs[s].ids.size()) kv.blocks().release(first_id + (SeqId)s);
    }
  }
  return logits;
}

// Every sequence alone, one token a step (the decode path).
inline std::vector<std::vector<float>> run_each_alone(ModelRunner& r, KvCache& kv, const std::vector<MixedSequence>& seqs,
                                                      SeqId first_id) {
  std::vector<std::vector<float>> out;
  for (size_t s = 0; s < seqs.size(); ++s)
    out.push_back(run_mixed(r, kv, {MixedSequence{seqs[s].ids, 0}}, 1, first_id + (SeqId)s)[0]);
  return out;
}

// Checks that got and want hold the same bits, row by row, naming the
// first row of each sequence that differs.
inline void check_same_logits(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                              int32_t vocab) {
  REQUIRE(got.size() == want.size());
  for (size_t s = 0; s < got.size(); ++s) {
    CAPTURE(s);
    REQUIRE(got[s].size() == want[s].size());
    const size_t rows = got[s].size() / (size_t)vocab;
    size_t differing = 0, first = rows;
    double worst = 0;
    for (size_t t = 0; t < rows; ++t) {
      const float* g = got[s].data() + t * (size_t)vocab;
      const float* w = want[s].data() + t * (size_t)vocab;
      if (std::memcmp(g, w, (size_t)vocab * sizeof(float)) == 0) continue;
      ++differing;
      first = std::min(first, t);
      for (int32_t i = 0; i < vocab; ++i) worst = std::max(worst, std::fabs((double)g[i] - (double)w[i]));
    }
    CHECK_MESSAGE(differing == 0, differing << " of " << rows << " logit rows differ, the first after token " << first
                                            << ", by up to " << worst);
  }
}

inline std::shared_ptr<const ModelWeights> load_shared_model(const std::string& rel) {
  auto w = load_model(std::string(TESSERA_SHARED_DIR) + "/" + rel);
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  return std::make_shared<const ModelWeights>(std::move(*w));
}

// A two-layer llama in `type` (engine/bench/synthetic_model.h), wide enough
// for q4_K's 256-element blocks, with context for a few hundred tokens.
inline std::shared_ptr<const ModelWeights> small_llama(DType type, uint64_t seed) {
  SyntheticSpec s;
  s.weight_type = type;
  s.seed = seed;
  s.config.dim = 256;
  s.config.hidden_dim = 768;
  s.config.n_layers = 2;
  s.config.n_heads = 4;
  s.config.n_kv_heads = 2;
  s.config.rope_dims = 64;  // head_dim
  s.config.vocab_size = 96;
  s.config.context_length = 320;
  SerialFor pf;
  auto w = make_synthetic_llama(s, pf);
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  return std::make_shared<const ModelWeights>(std::move(*w));
}

// Four sequences (one of 200 tokens, crossing a 128-position attention
// piece) joining at different steps, on a runner opened with `o` (four
// sequences a step): mixed steps with each chunk limit give every token the
// bits it gets with its sequence alone, one token a step.
inline void check_mixed_against_alone(std::shared_ptr<const ModelWeights> w, RunnerOptions o, const std::vector<int32_t>& chunks,
                                      Rng& rng) {
  o.max_seqs = 4;
  auto rc = open_runner(std::move(w), o);
  REQUIRE_MESSAGE(rc.has_value(), rc.status().message());
  ModelRunner& r = *rc->runner;
  const int32_t vocab = r.config().vocab_size;
  const auto seqs = random_sequences({37, 5, 200, 12}, {0, 2, 1, 6}, vocab, rng);
  const auto alone = run_each_alone(r, *rc->kv, seqs, 100);
  for (int32_t chunk : chunks) {
    CAPTURE(chunk);
    check_same_logits(run_mixed(r, *rc->kv, seqs, chunk, 1000 * chunk), alone, vocab);
  }
}

}  // namespace tessera::testing
