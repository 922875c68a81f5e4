// Steps padded to their bucket (core/hal/step_padding.h), as the CUDA and
// ROCm backends run every step of a graph-captured bucket: on the CPU, whose
// kernels have the same contracts, a mixed step of two sequences padded to
// 8 tokens and 8 sequences gives the real logit rows the bits of the
// unpadded step (the CPU kernels are batch invariant under 64 rows,
// docs/backends.md) and leaves the KV pools as the unpadded step does: the
// padded tokens write no slot and no real token attends to them.
#include <doctest/doctest.h>

#include "core/hal/step_check.h"
#include "core/hal/step_padding.h"
#include "engine/models/load_model.h"
#include "engine/runtime/model_runner.h"
#include "support/bound_plan.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// Two sequences: 3 prompt tokens at positions 0..2 in blocks 0.., and a
// decode token at position `pos1` in blocks 4..; logits of each last token.
StepArrays two_sequences(const ShapeBucket& b, int32_t block_size, int32_t pos1) {
  StepArrays s;
  s.token_ids = {5, 9, 2, 7};
  s.positions = {0, 1, 2, pos1};
  s.slot_mapping = {0, 1, 2, 4 * block_size + pos1};
  s.query_start = {0, 3, 4};
  s.seq_lens = {3, pos1 + 1};
  for (int32_t seq = 0; seq < 2; ++seq)
    for (int32_t i = 0; i < b.max_blocks_per_seq; ++i) s.block_tables.push_back(seq * 4 + i);
  s.logit_rows = {2, 3};
  return s;
}

struct PaddingRun {
  std::vector<std::byte> logits;  // the real logit rows
  std::vector<std::vector<std::byte>> pools;
};

PaddingRun run_step(Device& device, const Plan& plan, const StepArgs& args, int32_t real_logit_rows) {
  auto stream = device.create_stream();
  REQUIRE(stream.has_value());
  BoundPlan bp = bind_random(device, **stream, plan, 977);  // the same weights and pool contents every time
  const Status st = (*stream)->run(*bp.exe, args);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  PaddingRun r;
  r.logits.resize((size_t)real_logit_rows * plan.logits.desc.row_bytes());
  REQUIRE((*stream)->download(r.logits, bp.exe->buffer(plan.logits.buffer), plan.logits.offset).is_ok());
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (plan.buffers[i].role != BufferRole::kv_pool) continue;
    r.pools.emplace_back(plan.buffers[i].bytes);
    REQUIRE((*stream)->download(r.pools.back(), *bp.bound[i], 0).is_ok());
  }
  REQUIRE((*stream)->synchronize().is_ok());
  return r;
}

}  // namespace

TEST_CASE("pad_step fills every field to the bucket with inert values and keeps the step's own") {
  const ShapeBucket b{8, 4, 8, 3};
  StepArrays s;
  s.token_ids = {11, 12, 13};
  s.positions = {4, 5, 0};
  s.slot_mapping = {20, 21, 40};
  s.query_start = {0, 2, 3};
  s.seq_lens = {6, 1};
  s.block_tables = {1, 2, 3, 5, 6, 7};
  s.logit_rows = {1, 2};
  StepArrays p;
  pad_step(s.args(), b, 4, p);
  const StepArgs a = p.args();
  CHECK(a.n_tokens == 8);
  CHECK(a.n_seqs == 4);
  CHECK(a.n_logit_rows == 4);
  CHECK(p.token_ids == std::vector<int32_t>{11, 12, 13, 0, 0, 0, 0, 0});
  CHECK(p.positions == std::vector<int32_t>{4, 5, 0, 0, 0, 0, 0, 0});
  CHECK(p.slot_mapping == std::vector<int32_t>{20, 21, 40, -1, -1, -1, -1, -1});
  CHECK(p.query_start == std::vector<int32_t>{0, 2, 3, 3, 3});
  CHECK(p.seq_lens == std::vector<int32_t>{6, 1, 0, 0});
  CHECK(p.block_tables == std::vector<int32_t>{1, 2, 3, 5, 6, 7, 0, 0, 0, 0, 0, 0});
  CHECK(p.logit_rows == std::vector<int32_t>{1, 2, 0, 0});
  // The padded step passes the checks every backend makes (the pads index nothing out of range).
  CHECK(check_step_args(b, StepLimits{64, 8, 16, 32, 0}, a).is_ok());
  // Reused storage shrinks and grows with the next step.
  s.logit_rows = {2};
  pad_step(s.args(), b, 1, p);
  CHECK(p.logit_rows == std::vector<int32_t>{2});
}

TEST_CASE("stories260K on the CPU: a mixed step padded to its bucket gives the real rows the same bits and the KV pools the same bytes") {
  auto w = load_model(TESSERA_SHARED_DIR "/models/stories260K.bin");
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  for (const char* passes : {"default", "none"}) {
    CAPTURE(passes);
    RunnerOptions o;
    o.passes = passes;
    o.max_context = 256;
    o.max_seqs = 8;
    auto rc = open_runner(std::make_shared<const ModelWeights>(*w), o);
    REQUIRE_MESSAGE(rc.has_value(), rc.status().message());
    auto plan = rc->runner->plan_for(5, 64);  // a bucket of 8 tokens and 8 sequences
    REQUIRE_MESSAGE(plan.has_value(), plan.status().message());
    const ShapeBucket& b = (*plan)->bucket;
    REQUIRE(b.max_tokens == 8);
    REQUIRE(b.max_seqs == 8);
    Device& device = rc->runner->device();
    for (int32_t pos1 : {0, 9, 17}) {
      CAPTURE(pos1);
      const StepArrays step = two_sequences(b, o.block_size, pos1);
      const PaddingRun plain = run_step(device, **plan, step.args(), 2);
      StepArrays padded;
      pad_step(step.args(), b, 4, padded);
      const PaddingRun pad = run_step(device, **plan, padded.args(), 2);
      CHECK(pad.logits == plain.logits);
      REQUIRE(pad.pools.size() == plain.pools.size());
      CHECK(!plain.pools.empty());
      for (size_t i = 0; i < plain.pools.size(); ++i) CHECK(pad.pools[i] == plain.pools[i]);
    }
  }
}
