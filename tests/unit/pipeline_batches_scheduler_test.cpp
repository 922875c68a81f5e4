// The scheduler's independent batches (SchedulerConfig::batches, pipeline
// parallelism's virtual engines, docs/parallelism.md): a step schedules one
// batch's sequences, never one with a step in flight, the batches stay even,
// and a preemption never takes a sequence whose step is in flight.
#include <doctest/doctest.h>

#include <memory>
#include <set>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/serving/scheduler.h"
#include "support/random.h"

using namespace tessera;

namespace {

std::unique_ptr<Sequence> prompt_seq(SeqId id, int32_t len) {
  auto s = std::make_unique<Sequence>(id, SamplerParams{});
  s->tokens.assign((size_t)len, 7);
  s->prompt_len = len;
  return s;
}

void set_in_flight(const SchedulerOutput& out, bool v) {
  for (const auto& e : out.seqs) e.seq->in_flight = v;
}

// As the engine does after a step: computed, and one token sampled for each sequence that samples.
void complete(Scheduler& s, const SchedulerOutput& out) {
  set_in_flight(out, false);
  s.complete(out);
  for (const auto& e : out.seqs)
    if (e.samples) e.seq->tokens.push_back(9);
}

SchedulerConfig two_batches(int32_t max_num_seqs, int32_t max_num_batched_tokens) {
  SchedulerConfig c;
  c.max_num_seqs = max_num_seqs;
  c.max_num_batched_tokens = max_num_batched_tokens;
  c.batches = 2;
  return c;
}

// n prompts queued, the i-th of len(i) tokens.
template <class Len>
std::vector<std::unique_ptr<Sequence>> queue_prompts(Scheduler& s, int n, Len len) {
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < n; ++i) {
    seqs.push_back(prompt_seq(i + 1, len(i)));
    s.add(seqs.back().get());
  }
  return seqs;
}

}  // namespace

TEST_CASE("two batches: each step takes one batch's sequences, the batches split a burst of prompts evenly, in-flight ones wait") {
  BlockManager blocks({256, 16});
  Scheduler s(two_batches(16, 512), blocks, nullptr);
  const auto seqs = queue_prompts(s, 7, [](int i) { return 5 + i; });
  SchedulerOutput a, b;
  REQUIRE(s.schedule(&a, std::chrono::steady_clock::now(), 0).is_ok());
  set_in_flight(a, true);
  REQUIRE(s.schedule(&b, std::chrono::steady_clock::now(), 1).is_ok());
  set_in_flight(b, true);
  CHECK(a.seqs.size() == 4);  // its share of 7, rounded up
  CHECK(b.seqs.size() == 3);
  std::set<const Sequence*> in_a, in_b;
  for (const auto& e : a.seqs) {
    in_a.insert(e.seq);
    CHECK(e.seq->batch == 0);
  }
  for (const auto& e : b.seqs) {
    in_b.insert(e.seq);
    CHECK(e.seq->batch == 1);
  }
  for (const Sequence* p : in_a) CHECK(in_b.count(p) == 0);

  // With every sequence in flight, neither batch has anything to run.
  SchedulerOutput again;
  REQUIRE(s.schedule(&again, std::chrono::steady_clock::now(), 0).is_ok());
  CHECK(again.empty());
  REQUIRE(s.schedule(&again, std::chrono::steady_clock::now(), 1).is_ok());
  CHECK(again.empty());
  CHECK_FALSE(s.schedule(&again, std::chrono::steady_clock::now(), 2).is_ok());  // no batch 2

  // Batch 0's step done: its sequences decode again, batch 1's still wait.
  complete(s, a);
  REQUIRE(s.schedule(&again, std::chrono::steady_clock::now(), 0).is_ok());
  REQUIRE(again.seqs.size() == in_a.size());
  for (const auto& e : again.seqs) {
    CHECK(in_a.count(e.seq) == 1);
    CHECK(e.n_tokens == 1);
  }
  // A new prompt joins the batch whose step comes first, as its share allows.
  auto late = prompt_seq(100, 3);
  s.add(late.get());
  SchedulerOutput b2;
  complete(s, b);
  REQUIRE(s.schedule(&b2, std::chrono::steady_clock::now(), 1).is_ok());
  CHECK(b2.seqs.size() == 4);  // its 3 decodes and the new prompt (8 sequences, 4 a batch)
  CHECK(late->batch == 1);
}

TEST_CASE("two batches under a full KV cache: a preemption takes the newest sequence without a step in flight") {
  testing::Rng rng(43);
  // Room for 8 blocks of 4 tokens: four 8-token prompts fill them.
  BlockManager blocks({8, 4});
  Scheduler s(two_batches(8, 64), blocks, nullptr);
  const auto seqs = queue_prompts(s, 4, [](int) { return 8; });
  SchedulerOutput a, b;
  REQUIRE(s.schedule(&a, std::chrono::steady_clock::now(), 0).is_ok());
  set_in_flight(a, true);
  REQUIRE(s.schedule(&b, std::chrono::steady_clock::now(), 1).is_ok());
  REQUIRE(a.seqs.size() == 2);
  REQUIRE(b.seqs.size() == 2);
  REQUIRE(blocks.available_blocks() == 0);
  complete(s, b);
  // Batch 1's sequences need a block each for their 9th token, and none is
  // free; batch 0's are in flight, so batch 1's newest goes back to the queue.
  SchedulerOutput first;
  REQUIRE(s.schedule(&first, std::chrono::steady_clock::now(), 1).is_ok());
  REQUIRE(first.preempted.size() == 1);
  CHECK(first.preempted[0] == b.seqs.back().seq);
  REQUIRE(first.seqs.size() == 1);
  CHECK(first.seqs[0].seq == b.seqs.front().seq);
  set_in_flight(first, true);
  complete(s, first);
  // More steps of batch 1, however many: never a preemption of batch 0's.
  const int rounds = rng.integer(1, 3);
  for (int r = 0; r < rounds; ++r) {
    SchedulerOutput b2;
    REQUIRE(s.schedule(&b2, std::chrono::steady_clock::now(), 1).is_ok());
    for (const Sequence* p : b2.preempted) CHECK_FALSE(p->in_flight);
    for (const auto& e : a.seqs) CHECK(e.seq->status == SeqStatus::running);
    if (!b2.empty()) {
      set_in_flight(b2, true);
      complete(s, b2);
    }
  }
  CHECK(s.preemptions() >= 1);
}
