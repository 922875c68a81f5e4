// generate() with the request's logit adjustments: the ids of a loop written
// here that feeds the session token by token and picks the first argmax of
// the adjusted logits computed from the whole history (sampling_oracle.h).
// The runner samples greedy tokens on the device, which takes the raw
// argmax, so generate() must take the host's path when adjustments are on.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

#include "engine/models/load_model.h"
#include "engine/runtime/session.h"
#include "sampling_oracle.h"
#include "support/reference_cases.h"

using namespace tessera;

TEST_CASE("generate() at temperature 0 applies the logit bias and the penalties over the prompt and the generated ids") {
  auto w = load_model(TESSERA_SHARED_DIR "/models/stories260K.bin");
  REQUIRE_MESSAGE(w.has_value(), w.status().message());
  RunnerOptions o;
  o.max_context = 128;
  o.max_seqs = 2;
  o.sample_on_device = true;
  auto rc = open_runner(std::make_shared<const ModelWeights>(std::move(*w)), o);
  REQUIRE_MESSAGE(rc.has_value(), rc.status().message());
  const auto cases = testing::read_id_cases(TESSERA_SHARED_DIR "/reference/stories260K.greedy.txt");
  REQUIRE(!cases.empty());
  const std::vector<int32_t> prompt(cases[0].full_ids.begin(), cases[0].full_ids.begin() + 12);
  const int32_t generated_count = 40;

  GenerateOptions g;
  g.steps = (int32_t)prompt.size() + generated_count - 1;
  g.stop_at_bos = false;
  g.sampler.temperature = 0.0f;
  g.sampler.repetition_penalty = 1.3f;
  g.sampler.presence_penalty = 0.5f;
  g.sampler.frequency_penalty = 0.3f;
  // The unadjusted greedy continuation's first token, banned.
  g.sampler.logit_bias = {{cases[0].full_ids[prompt.size()], -100.0f}, {7, 1.5f}};

  auto session = Session::create(*rc->runner, *rc->kv);
  REQUIRE(session.has_value());
  auto got = generate(**session, prompt, g);
  REQUIRE_MESSAGE(got.has_value(), got.status().message());

  auto oracle = Session::create(*rc->runner, *rc->kv);
  REQUIRE(oracle.has_value());
  REQUIRE((*oracle)->feed(prompt).is_ok());
  std::vector<int32_t> generated;
  for (int32_t i = 0; i < generated_count; ++i) {
    const std::vector<float> logits((*oracle)->logits().begin(), (*oracle)->logits().end());
    const std::vector<float> adjusted = testing::reference_adjusted(logits, g.sampler, prompt, generated);
    const int32_t next = (int32_t)(std::max_element(adjusted.begin(), adjusted.end()) - adjusted.begin());
    generated.push_back(next);
    if (i + 1 < generated_count) REQUIRE((*oracle)->feed(std::vector<int32_t>{next}).is_ok());
  }
  std::vector<int32_t> want = prompt;
  want.insert(want.end(), generated.begin(), generated.end());
  CHECK(got->ids == want);
  CHECK(got->ids[prompt.size()] != cases[0].full_ids[prompt.size()]);
}

TEST_CASE("generate() refuses a logit bias outside the model's vocabulary") {
  auto w = load_model(TESSERA_SHARED_DIR "/models/stories260K.bin");
  REQUIRE(w.has_value());
  RunnerOptions o;
  o.max_context = 64;
  auto rc = open_runner(std::make_shared<const ModelWeights>(std::move(*w)), o);
  REQUIRE(rc.has_value());
  auto session = Session::create(*rc->runner, *rc->kv);
  REQUIRE(session.has_value());
  GenerateOptions g;
  g.sampler.logit_bias = {{512, 1.0f}};
  const auto r = generate(**session, std::vector<int32_t>{1}, g);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.status().message() == "logit_bias: token id 512 is outside the vocabulary [0, 512)");
}
