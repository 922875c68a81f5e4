// ModelRunner's step pipeline: submit/collect with two steps in flight, the
// greedy tokens sampled on the device, copy-on-write run on the device for a
// forked sequence, and the KV cache sized from a memory budget. The oracles
// are run.c's logits and greedy ids for stories260K (../shared/reference).
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include "engine/models/load_model.h"
#include "kernels/cpu/cpu_kernels.h"
#include "engine/runtime/session.h"
#include "support/reference_cases.h"

using namespace tessera;

namespace {

constexpr int kRows = 48, kVocab = 512;

std::shared_ptr<const ModelWeights> stories() {
  auto w = load_model(TESSERA_SHARED_DIR "/models/stories260K.bin");
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  return std::make_shared<const ModelWeights>(std::move(*w));
}

std::vector<float> reference_logits() {
  std::ifstream f(TESSERA_SHARED_DIR "/reference/stories260K.logits.f32", std::ios::binary);
  std::vector<float> v((size_t)kRows * kVocab);
  f.read(reinterpret_cast<char*>(v.data()), (std::streamsize)(v.size() * sizeof(float)));
  REQUIRE(f.gcount() == (std::streamsize)(v.size() * sizeof(float)));
  return v;
}

// The ids run.c fed while writing its logits: the fifth reference line.
std::vector<int32_t> reference_ids() {
  const auto cases = testing::read_id_cases(TESSERA_SHARED_DIR "/reference/stories260K.greedy.txt");
  REQUIRE(cases.size() >= 5);
  return cases[4].full_ids;
}

double row_rel_error(std::span<const float> ours, const float* ref) {
  double diff = 0, scale = 0;
  for (int i = 0; i < kVocab; ++i) {
    diff = std::max(diff, (double)std::fabs(ours[(size_t)i] - ref[i]));
    scale = std::max(scale, (double)std::fabs(ref[i]));
  }
  return diff / scale;
}

// One decode step's arrays for a sequence of the cache, reserved at `pos`.
struct OneStep {
  int32_t token = 0, pos = 0, slot = 0, row = 0, seq_len = 0;
  int32_t query_start[2] = {0, 1};
  std::vector<int32_t> table;
  std::vector<BlockCopy> copies;
  void prepare(ModelRunner& r, KvCache& kv, SeqId id, int32_t position, int32_t tok) {
    copies.clear();
    REQUIRE(kv.blocks().reserve(id, position + 1, &copies).is_ok());
    token = tok;
    pos = position;
    slot = kv.blocks().slot(id, position);
    seq_len = position + 1;
    const auto t = kv.blocks().block_table(id);
    table.assign((size_t)r.max_blocks_per_seq(), 0);
    std::copy(t.begin(), t.end(), table.begin());
  }
  StepRequest request(StepOutputs out) const {
    StepRequest q;
    q.args = {&token, &pos, &slot, 1, query_start, &seq_len, table.data(), 1, &row, 1};
    q.block_copies = copies;
    q.outputs = out;
    return q;
  }
};

}  // namespace

TEST_CASE("two sequences with their steps in flight together each get run.c's logits, and device greedy equals host argmax") {
  RunnerOptions o;
  o.max_context = 64;
  o.max_seqs = 1;
  o.sample_on_device = true;
  auto rc = open_runner(stories(), o);
  REQUIRE_MESSAGE(rc.has_value(), rc.status().message());
  ModelRunner& r = *rc->runner;
  KvCache& kv = *rc->kv;
  // No budget: one whole 64-position sequence, 4 blocks of 16.
  CHECK(kv.spec().num_blocks == 4);
  const auto ref = reference_logits();
  const auto ids = reference_ids();
  const SeqId a = 101, b = 102;
  // Two sequences fed the same ids token by token, their steps interleaved:
  // A's step t and B's step t are in flight together.
  RunnerOptions two = o;
  two.max_seqs = 2;
  auto rc2 = open_runner(stories(), two);
  REQUIRE(rc2.has_value());
  ModelRunner& r2 = *rc2->runner;
  KvCache& kv2 = *rc2->kv;
  REQUIRE(kv2.blocks().add_sequence(a).is_ok());
  REQUIRE(kv2.blocks().add_sequence(b).is_ok());
  OneStep sa, sb;
  for (int t = 0; t < kRows; ++t) {
    CAPTURE(t);
    sa.prepare(r2, kv2, a, t, ids[(size_t)t]);
    sb.prepare(r2, kv2, b, t, ids[(size_t)t]);
    auto ta = r2.submit(sa.request(StepOutputs::both));
    REQUIRE_MESSAGE(ta.has_value(), ta.status().message());
    auto tb = r2.submit(sb.request(StepOutputs::both));
    REQUIRE_MESSAGE(tb.has_value(), tb.status().message());
    // A third is refused until one is collected.
    CHECK(r2.submit(sa.request(StepOutputs::logits)).status().code() == StatusCode::invalid_argument);
    auto ra = r2.collect(*ta);
    REQUIRE(ra.has_value());
    const std::vector<float> la(ra->logits.begin(), ra->logits.end());
    const int32_t ga = ra->tokens[0];
    auto rb = r2.collect(*tb);
    REQUIRE(rb.has_value());
    CHECK(row_rel_error(la, &ref[(size_t)t * kVocab]) < 1e-4);
    CHECK(std::vector<float>(rb->logits.begin(), rb->logits.end()) == la);
    CHECK(ga == (int32_t)(std::max_element(la.begin(), la.end()) - la.begin()));
    CHECK(rb->tokens[0] == ga);
  }
  CHECK(r2.collect(12345).status().code() == StatusCode::invalid_argument);
  // The one-at-a-time path (step) gives the same rows as the pipelined one.
  REQUIRE(kv.blocks().add_sequence(a).is_ok());
  OneStep s;
  std::vector<float> logits(kVocab);
  for (int t = 0; t < 8; ++t) {
    s.prepare(r, kv, a, t, ids[(size_t)t]);
    REQUIRE(r.step(s.request(StepOutputs::logits).args, logits).is_ok());
    CHECK(row_rel_error(logits, &ref[(size_t)t * kVocab]) < 1e-4);
  }
}

TEST_CASE("a forked sequence diverging inside a shared partial block gives the ids of two independent runs (copy-on-write on the device)") {
  RunnerOptions o;
  o.max_context = 128;
  o.max_seqs = 3;
  o.sample_on_device = true;
  auto rc = open_runner(stories(), o);
  REQUIRE_MESSAGE(rc.has_value(), rc.status().message());
  const auto cases = testing::read_id_cases(TESSERA_SHARED_DIR "/reference/stories260K.greedy.txt");
  REQUIRE(!cases.empty());
  // 21 tokens: the second block (16..20) is partly filled when the fork shares it.
  std::vector<int32_t> prompt(cases[0].full_ids.begin(), cases[0].full_ids.begin() + 21);
  GenerateOptions g;
  g.steps = 60;
  g.sampler.temperature = 0.0f;
  g.stop_at_bos = false;
  auto independent = [&](const std::vector<int32_t>& p) {
    auto s = Session::create(*rc->runner, *rc->kv);
    REQUIRE(s.has_value());
    auto r = generate(**s, p, g);
    REQUIRE_MESSAGE(r.has_value(), r.status().message());
    return r->ids;
  };
  std::vector<int32_t> prompt_b = prompt;
  prompt_b.push_back(42);  // B diverges at once, into the shared block
  const auto want_a = independent(prompt);
  const auto want_b = independent(prompt_b);
  // run.c agrees with the independent run A.
  CHECK(std::equal(want_a.begin(), want_a.end(), cases[0].full_ids.begin()));

  auto parent = Session::create(*rc->runner, *rc->kv);
  REQUIRE(parent.has_value());
  REQUIRE((*parent)->feed_greedy(prompt).is_ok());
  const int32_t free_before = rc->kv->blocks().free_blocks();
  auto child = (*parent)->fork();
  REQUIRE(child.has_value());
  CHECK(rc->kv->blocks().free_blocks() == free_before);  // shared, not copied yet
  // B first: it writes token 42 at position 21 into the shared block, which is copied.
  std::vector<int32_t> got_b = prompt_b;
  REQUIRE((*child)->feed_greedy(std::span<const int32_t>(&prompt_b.back(), 1)).is_ok());
  CHECK(rc->kv->blocks().free_blocks() == free_before - 1);
  std::vector<int32_t> got_a = prompt;
  got_a.push_back((*parent)->greedy_token());
  got_b.push_back((*child)->greedy_token());
  while ((int32_t)got_a.size() < (int32_t)want_a.size()) {
    REQUIRE((*parent)->feed_greedy(std::span<const int32_t>(&got_a.back(), 1)).is_ok());
    got_a.push_back((*parent)->greedy_token());
  }
  while ((int32_t)got_b.size() < (int32_t)want_b.size()) {
    REQUIRE((*child)->feed_greedy(std::span<const int32_t>(&got_b.back(), 1)).is_ok());
    got_b.push_back((*child)->greedy_token());
  }
  CHECK(got_a == want_a);
  CHECK(got_b == want_b);
}

TEST_CASE("the KV cache is sized from a memory budget, and a budget below one whole-context sequence is refused in one line") {
  const auto w = stories();
  RunnerOptions o;
  o.max_context = 256;
  // stories260K: 5 layers, 4 KV heads of 8: K and V of one 16-token block over every layer.
  const uint64_t per_block = 2ull * 5 * 16 * 32 * 4;
  o.kv_cache_bytes = per_block * 40 + 100;
  auto r = ModelRunner::create(w, o);
  REQUIRE_MESSAGE(r.has_value(), r.status().message());
  CHECK((*r)->kv_spec().num_blocks == 40);
  auto kv = (*r)->create_kv_cache();
  REQUIRE(kv.has_value());
  CHECK((*kv)->bytes() == per_block * 40);
  CHECK((*kv)->pools().size() == 10);
  CHECK((*kv)->blocks().num_blocks() == 40);
  // A step before the cache is attached is refused, not run.
  int32_t tok = 1, pos = 0, slot = 0, row = 0, len = 1, qs[2] = {0, 1}, table[16] = {};
  float logits[kVocab];
  CHECK((*r)->step({&tok, &pos, &slot, 1, qs, &len, table, 1, &row, 1}, logits).code() == StatusCode::invalid_argument);
  REQUIRE((*r)->attach(**kv).is_ok());
  CHECK((*r)->attach(**kv).code() == StatusCode::invalid_argument);

  o.kv_cache_bytes = per_block * 15;  // 256 positions need 16 blocks
  auto small = ModelRunner::create(w, o);
  REQUIRE(!small.has_value());
  CHECK(small.status().code() == StatusCode::resource_exhausted);
  CHECK(small.status().message().find("--kv-cache-memory") == 0);
  CHECK(small.status().message().find("needs 16") != std::string::npos);
}

namespace {

// Resident kB of this process's map of `path` (/proc/self/smaps), -1 where
// there is none (not Linux, or not mapped).
int64_t resident_kb_of_map(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_map = false;
  int64_t kb = -1;
  while (std::getline(smaps, line)) {
    const bool header = !line.empty() && std::isxdigit((unsigned char)line[0]) && line.find('-') < line.find(' ');
    if (header) in_map = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
    else if (in_map && line.rfind("Rss:", 0) == 0) kb = std::max<int64_t>(kb, 0) + std::stoll(line.substr(4));
  }
  return kb;
}

}  // namespace

TEST_CASE("weights the runner reorders leave the file's pages: the process holds one copy of each") {
  if (kernels::cpu::matmul_preferred_layout(DType::f32) != WeightLayout::rows_x16) {
    MESSAGE("skipped: this CPU keeps f32 weights in rows (nothing is copied)");
    return;
  }
  const std::string path = std::filesystem::canonical(TESSERA_SHARED_DIR "/models/stories260K.bin").string();
  const auto w = stories();
  // Every tensor's pages resident first, as a loader that read them would leave them.
  uint64_t sum = 0;
  for (const WeightTensor& t : w->tensors)
    for (size_t i = 0; i < t.data.size(); i += 512) sum += (uint64_t)t.data[i];
  const int64_t before = resident_kb_of_map(path);
  if (before < 0) {
    MESSAGE("skipped: no /proc/self/smaps entry for " << path << " (checksum " << sum << ")");
    return;
  }
  RunnerOptions o;
  o.max_context = 64;
  auto r = ModelRunner::create(w, o);
  REQUIRE_MESSAGE(r.has_value(), r.status().message());
  const int64_t after = resident_kb_of_map(path);
  // stories260K's 1 MiB is nearly all matmul weights (the classifier tied),
  // each reordered to rows_x16 and its pages released; the norms stay, and
  // a read of one maps up to 64 KiB of cached pages around it again (the
  // kernel's fault-around), so about 150 kB remain here, not 1 MiB.
  INFO("resident kB of the file's map: " << before << " before the runner, " << after << " after");
  CHECK(before >= 900);
  CHECK(after <= before / 4);
  // The released pages come back from the file when read again.
  uint64_t again = 0;
  for (const WeightTensor& t : w->tensors)
    for (size_t i = 0; i < t.data.size(); i += 512) again += (uint64_t)t.data[i];
  CHECK(again == sum);
}
