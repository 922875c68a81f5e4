// A prompt prefilled in one engine, its KV blocks read out chunk by chunk as
// the prefill worker ships them, and imported into another engine's own
// blocks: decoding there gives the ids decoding in the first gives (run.c's
// for f32), for every KV dtype, and no block leaks on either side, also when
// the transfer fails midway.
#include <doctest/doctest.h>

#include <set>

#include "engine/disagg/kv_blocks.h"
#include "engine/engine_fixture.h"
#include "engine/kv_prefill.h"
#include "support/random.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

void wait_idle(ServingEngine& e) {
  for (int i = 0; i < 2000 && (e.metrics().running + e.metrics().waiting > 0); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // reap_finished publishes after the step; one more turn of the loop.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void require_no_leak(ServingEngine& e) {
  wait_idle(e);
  const BlockManager& b = e.blocks_for_tests();
  CHECK(b.num_sequences() == 0);
  CHECK(b.available_blocks() == b.num_blocks());
  CHECK(b.check_invariants().is_ok());
}

EngineSetup setup(const std::string& model, const std::string& kv_type, int32_t chunk) {
  EngineSetup s;
  s.model = model;
  s.kv_type = kv_type;
  s.config.scheduler.max_prefill_chunk = chunk;
  return s;
}

// Every case: prefilled on `a`, decoded on `b`; the ids equal `expected(i)`.
// count_chunks: the prompt is computed in chunks of 7 (nothing cached).
template <class Expected>
void check_moved(ServingEngine& a, ServingEngine& b, const std::vector<ReferenceCase>& cases, Expected expected, bool count_chunks) {
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    Prefilled p = prefill(a, cases[i].request);
    const RequestResult& pr = p.handle->wait();
    REQUIRE_MESSAGE(pr.sequences[0].finish != FinishReason::error, pr.sequences[0].error);
    // Chunks of 7 tokens: every prompt longer than 7 is handed over in several.
    if (count_chunks) CHECK(p.chunks == (int)(cases[i].prompt.size() + 6) / 7);
    auto h = b.submit_imported(cases[i].request, std::move(p.import));
    REQUIRE_MESSAGE(h.has_value(), h.status().message());
    const RequestResult& r = (*h)->wait();
    REQUIRE_MESSAGE(r.sequences[0].finish != FinishReason::error, r.sequences[0].error);
    CHECK(join_ids(full_ids(cases[i], r)) == join_ids(expected(i)));
  }
}

// q run whole on `a`, and prefilled on `a` then decoded on `b`: both results,
// and the first tokens the prefill handed over.
struct WholeAndMoved {
  RequestResult whole, moved;
  std::vector<disagg::FirstToken> first;
};
WholeAndMoved whole_and_moved(ServingEngine& a, ServingEngine& b, const Request& q) {
  WholeAndMoved out;
  auto whole = a.submit(q);
  REQUIRE(whole.has_value());
  out.whole = (*whole)->wait();
  Prefilled p = prefill(a, q);
  out.first = p.import.first;
  auto h = b.submit_imported(q, std::move(p.import));
  REQUIRE_MESSAGE(h.has_value(), h.status().message());
  out.moved = (*h)->wait();
  REQUIRE(out.moved.sequences.size() == (size_t)q.n);
  return out;
}

// `prefilled` run on a's prefill, its import submitted to b as `asked`:
// refused; the one-line reason.
std::string refused_import(ServingEngine& a, ServingEngine& b, const Request& prefilled, const Request& asked) {
  Prefilled p = prefill(a, prefilled);
  auto h = b.submit_imported(asked, std::move(p.import));
  REQUIRE_FALSE(h.has_value());
  return h.status().message();
}

}  // namespace

TEST_CASE("disagg: stories260K prefilled in one engine and decoded in another gives run.c's greedy ids (f32 KV)") {
  TestEngine a = open_test_engine(setup("models/stories260K.bin", "f32", 7));
  TestEngine b = open_test_engine(setup("models/stories260K.bin", "f32", 64));
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
  check_moved(*a.engine, *b.engine, cases, [&](size_t i) { return cases[i].full_ids; }, true);
  // Again: now the prefill engine finds the prompts' full blocks in its
  // prefix cache and computes only the rest, yet the first hand-over still
  // carries every block from the first.
  check_moved(*a.engine, *b.engine, cases, [&](size_t i) { return cases[i].full_ids; }, false);
  require_no_leak(*a.engine);
  require_no_leak(*b.engine);
}

TEST_CASE("disagg: on the CPU each chunk's K/V leave pool by pool while the step runs, every pool before the last layer's is written") {
  TestEngine a = open_test_engine(setup("models/stories260K.bin", "f32", 7));
  TestEngine b = open_test_engine(setup("models/stories260K.bin", "f32", 64));
  const size_t pools = a->kv().pools().size();
  REQUIRE(pools >= 4);  // stories260K: 5 layers, K and V each
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    // In each chunk's first hand-over (layer 0's K), the last layer's V pool
    // as it then is: the chunk's positions there are not written yet.
    struct Early {
      int32_t first_block = 0, n_blocks = 0;
      std::vector<std::byte> last_pool;
    };
    std::vector<Early> early;
    std::vector<size_t> order;
    auto watch = [&](const KvChunk& c) {
      REQUIRE(c.pools.size() == 1);
      order.push_back(c.pools[0]);
      if (c.pools[0] != 0) return;
      Early x{c.first_block, (int32_t)c.blocks.size(), std::vector<std::byte>(c.blocks.size() * c.kv.pools()[pools - 1].block_bytes)};
      REQUIRE(disagg::read_pool_blocks(c.runner, c.kv, pools - 1, c.blocks, x.last_pool).is_ok());
      early.push_back(std::move(x));
    };
    Prefilled p = prefill(*a.engine, cases[i].request, 0, watch);
    REQUIRE(p.handle->wait().sequences[0].finish != FinishReason::error);
    const int chunks = (int)(cases[i].prompt.size() + 6) / 7;
    CHECK(p.chunks == chunks);
    CHECK(p.hand_overs == chunks * (int)pools);
    // Pool after pool, in the order the layers compute: K then V of each.
    for (size_t k = 0; k < order.size(); ++k) CHECK(order[k] == k % pools);
    // What the last pool held when layer 0's K left differs from what it
    // holds now in every block of that chunk: it left before the last layer ran.
    for (const Early& x : early) {
      const auto now = p.import.payload.blocks(pools - 1, x.first_block, x.n_blocks);
      CHECK_FALSE(std::equal(now.begin(), now.end(), x.last_pool.begin()));
    }
    auto h = b->submit_imported(cases[i].request, std::move(p.import));
    REQUIRE_MESSAGE(h.has_value(), h.status().message());
    CHECK(join_ids(full_ids(cases[i], (*h)->wait())) == join_ids(cases[i].full_ids));
  }
  wait_idle(*a.engine);
  CHECK(a->metrics().kv_exports_during_step > 0);
  CHECK(a->metrics().kv_exports_after_step == 0);
  require_no_leak(*a.engine);
  require_no_leak(*b.engine);
}

TEST_CASE("disagg: moved K/V decodes as the prefill engine itself decodes, for f16, bf16, q8_0 and fp8_e4m3 pools") {
  struct Kind {
    const char* model;
    const char* kv;
  };
  // q8_0 and fp8_e4m3 need a head_dim that is a multiple of 32: the zoo's llama (dim 128, 4 heads).
  for (Kind k : {Kind{"models/stories260K.bin", "f16"}, Kind{"models/stories260K.bin", "bf16"}, Kind{"models/zoo/llama-f32.gguf", "q8_0"},
                 Kind{"models/zoo/llama-f32.gguf", "fp8_e4m3"}}) {
    CAPTURE(k.kv);
    TestEngine a = open_test_engine(setup(k.model, k.kv, 7));
    TestEngine b = open_test_engine(setup(k.model, k.kv, 64));
    std::vector<ReferenceCase> cases;
    if (std::string(k.model).find("stories") != std::string::npos) {
      cases = reference_cases("reference/stories260K.greedy.txt", 120, nullptr);
      cases.resize(3);
    } else {
      Rng rng(7);
      for (int i = 0; i < 3; ++i) {
        ReferenceCase c;
        for (int t = 0; t < 20 + 9 * i; ++t) c.prompt.push_back(rng.integer(2, a->runner().config().vocab_size - 1));
        c.request.prompt = c.prompt;
        c.request.max_tokens = 40;
        c.request.sampling.temperature = 0;
        c.request.ignore_eos = true;
        c.request.detokenize = false;
        cases.push_back(c);
      }
    }
    // The oracle: the whole request decoded in the prefill engine itself.
    std::vector<std::vector<int32_t>> colocated;
    for (const ReferenceCase& c : cases) {
      auto h = a->submit(c.request);
      REQUIRE(h.has_value());
      colocated.push_back(full_ids(c, (*h)->wait()));
    }
    check_moved(*a.engine, *b.engine, cases, [&](size_t i) { return colocated[i]; }, false);
    require_no_leak(*a.engine);
    require_no_leak(*b.engine);
  }
}

TEST_CASE("disagg: a transfer that fails midway fails that request only and leaks no block on either side") {
  TestEngine a = open_test_engine(setup("models/stories260K.bin", "f32", 7));
  TestEngine b = open_test_engine(setup("models/stories260K.bin", "f32", 64));
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
  // Another request decodes on the prefill engine meanwhile, and stays right.
  auto other = a->submit(cases[1].request);
  REQUIRE(other.has_value());
  // The longest prompt: several chunks, the second one's hand-over fails.
  size_t longest = 0;
  for (size_t i = 0; i < cases.size(); ++i)
    if (cases[i].prompt.size() > cases[longest].prompt.size()) longest = i;
  REQUIRE(cases[longest].prompt.size() > 14);
  Prefilled broken = prefill(*a.engine, cases[longest].request, 2);
  const RequestResult& br = broken.handle->wait();
  CHECK(br.sequences[0].finish == FinishReason::error);
  CHECK(br.sequences[0].error.find("went away") != std::string::npos);
  CHECK(join_ids(full_ids(cases[1], (*other)->wait())) == join_ids(cases[1].full_ids));
  require_no_leak(*a.engine);

  // The decode side refuses a payload that stops short, before it takes a block.
  Prefilled whole = prefill(*a.engine, cases[2].request);
  KvImport cut = whole.import;
  cut.payload.bytes.resize(cut.payload.bytes.size() / 2);
  auto refused = b->submit_imported(cases[2].request, std::move(cut));
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.status().message().find("bytes of K/V, expected") != std::string::npos);
  // Or one made for another prompt.
  Request longer = cases[2].request;
  longer.prompt.push_back(5);
  auto wrong = b->submit_imported(longer, whole.import);
  REQUIRE_FALSE(wrong.has_value());
  CHECK(wrong.status().message().find("positions for a prompt of") != std::string::npos);
  // The intact one still decodes right afterwards.
  auto h = b->submit_imported(cases[2].request, std::move(whole.import));
  REQUIRE(h.has_value());
  CHECK(join_ids(full_ids(cases[2], (*h)->wait())) == join_ids(cases[2].full_ids));
  require_no_leak(*b.engine);
  require_no_leak(*a.engine);
}

TEST_CASE("disagg: a payload from a cache of another shape is refused in one line") {
  TestEngine a = open_test_engine(setup("models/stories260K.bin", "f32", 7));
  TestEngine b = open_test_engine(setup("models/stories260K.bin", "f16", 64));
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 60, nullptr);
  Prefilled p = prefill(*a.engine, cases[0].request);
  auto h = b->submit_imported(cases[0].request, std::move(p.import));
  REQUIRE_FALSE(h.has_value());
  CHECK(h.status().message() == "kv transfer: --kv-type f32, this worker's is f16");
  require_no_leak(*a.engine);
  require_no_leak(*b.engine);
}

TEST_CASE("disagg: imports beyond the decode engine's sequence slots and KV blocks wait their turn and still decode run.c's ids") {
  TestEngine a = open_test_engine(setup("models/stories260K.bin", "f32", 64));
  // Two sequences a step, and blocks for about two whole contexts: the
  // imports queue for slots, and running ones are preempted for blocks.
  EngineSetup sb = setup("models/stories260K.bin", "f32", 64);
  sb.config.scheduler.max_num_seqs = 2;
  sb.kv_blocks = 16;
  sb.ctx = 256;
  TestEngine b = open_test_engine(sb);
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 200, nullptr);
  std::vector<std::shared_ptr<RequestState>> handles;
  for (int round = 0; round < 2; ++round)
    for (const ReferenceCase& c : cases) {
      Prefilled p = prefill(*a.engine, c.request);
      auto h = b->submit_imported(c.request, std::move(p.import));
      REQUIRE_MESSAGE(h.has_value(), h.status().message());
      handles.push_back(*h);
    }
  for (size_t i = 0; i < handles.size(); ++i) {
    CAPTURE(i);
    const ReferenceCase& c = cases[i % cases.size()];
    const RequestResult& r = handles[i]->wait();
    REQUIRE_MESSAGE(r.sequences[0].finish != FinishReason::error, r.sequences[0].error);
    CHECK(join_ids(full_ids(c, r)) == join_ids(c.full_ids));
  }
  CHECK(b->metrics().preemptions > 0);
  require_no_leak(*a.engine);
  require_no_leak(*b.engine);
}

TEST_CASE("disagg: a sampled request continues the prefill's draw stream, penalties included, and samples what the prefill engine samples") {
  TestEngine a = open_test_engine(setup("models/stories260K.bin", "f32", 7));
  TestEngine b = open_test_engine(setup("models/stories260K.bin", "f32", 64));
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 120, nullptr);
  for (uint64_t seed : {1ull, 42ull, 977ull}) {
    CAPTURE(seed);
    Request q = cases[seed % cases.size()].request;
    q.sampling.temperature = 0.9f;
    q.sampling.top_p = 0.95f;
    q.sampling.presence_penalty = 0.4f;
    q.sampling.seed = seed;
    const WholeAndMoved r = whole_and_moved(*a.engine, *b.engine, q);
    const std::vector<int32_t>& want = r.whole.sequences[0].tokens;
    // The first token is the one the whole run drew first.
    CHECK(r.first.at(0).token == want.at(0));
    CHECK(join_ids(r.moved.sequences[0].tokens) == join_ids(want));
  }
  require_no_leak(*a.engine);
  require_no_leak(*b.engine);
}

// Logprobs across the split: the first token's come from the prefill engine
// (the decode engine never sees the logits it was sampled from), the rest
// from the decode engine; together they are what one engine gives the whole
// request. A commit without them, for a request that asks, is refused.
TEST_CASE("disagg: logprobs cross the split: the first token's from the prefill, the rest from the decode, equal to one engine's") {
  TestEngine a = open_test_engine(setup("models/stories260K.bin", "f32", 7));
  TestEngine b = open_test_engine(setup("models/stories260K.bin", "f32", 64));
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 40, nullptr);
  for (int32_t top : {0, 3}) {
    CAPTURE(top);
    Request q = cases[1].request;
    q.logprobs = top;
    const WholeAndMoved r = whole_and_moved(*a.engine, *b.engine, q);
    const SequenceResult& want = r.whole.sequences[0];
    REQUIRE(want.logprobs.size() == want.tokens.size());
    REQUIRE(want.top_logprobs.at(0).size() == (size_t)top);
    REQUIRE(r.first.at(0).logprobs.has_value());
    check_same_logprobs(r.moved.sequences[0], want);
  }
  // Asked for, not sent: one line, nothing queued.
  Request q = cases[1].request;
  q.logprobs = 2;
  CHECK(refused_import(*a.engine, *b.engine, cases[1].request, q).find("without the logprobs this request asks for") != std::string::npos);
  require_no_leak(*a.engine);
  require_no_leak(*b.engine);
}

// n > 1 across the split: the prefill engine samples each sequence's first
// token (its own seed), the decode engine forks the imported prompt's blocks
// into n sequences and continues each from its token and draw stream: the n
// choices one engine gives, and no block leaks on either side.
TEST_CASE("disagg: n sampled sequences cross the split: each continues from its own first token and draws, as in one engine") {
  TestEngine a = open_test_engine(setup("models/stories260K.bin", "f32", 7));
  TestEngine b = open_test_engine(setup("models/stories260K.bin", "f32", 64));
  const auto cases = reference_cases("reference/stories260K.greedy.txt", 60, nullptr);
  for (int32_t n : {2, 4}) {
    CAPTURE(n);
    Request q = cases[(size_t)n % cases.size()].request;
    q.n = n;
    q.sampling.temperature = 1.0f;
    q.sampling.seed = 1234 + (uint64_t)n;
    q.logprobs = 1;
    const WholeAndMoved r = whole_and_moved(*a.engine, *b.engine, q);
    const RequestResult &want = r.whole, &got = r.moved;
    REQUIRE(r.first.size() == (size_t)n);
    std::set<std::string> distinct;
    for (int32_t i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK(got.sequences[(size_t)i].error == "");
      check_same_logprobs(got.sequences[(size_t)i], want.sequences[(size_t)i]);
      distinct.insert(join_ids(got.sequences[(size_t)i].tokens));
    }
    CHECK(distinct.size() > 1);  // the sequences do differ (their seeds do)
  }
  // First tokens for another n than the request's: refused in one line.
  Request q = cases[0].request;
  q.n = 3;
  CHECK(refused_import(*a.engine, *b.engine, cases[0].request, q) == "kv transfer: first tokens for 1 sequences; the request's n is 3");
  require_no_leak(*a.engine);
  require_no_leak(*b.engine);
}
