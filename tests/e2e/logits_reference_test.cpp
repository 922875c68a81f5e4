// stories260K's raw logits from run.c, against ours through the public API,
// fed token by token (the decode path) and as one prefill with every row.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <vector>

#include "support/cli.h"
#include "support/reference_cases.h"
#include "engine/api/model_impl.h"
#include "tessera/tessera.h"

using namespace tessera::testing;

namespace {

constexpr int kRows = 48, kVocab = 512;

std::vector<float> reference_logits() {
  std::ifstream f(shared_path("reference/stories260K.logits.f32"), std::ios::binary);
  std::vector<float> v((size_t)kRows * kVocab);
  f.read(reinterpret_cast<char*>(v.data()), (std::streamsize)(v.size() * sizeof(float)));
  REQUIRE(f.gcount() == (std::streamsize)(v.size() * sizeof(float)));
  return v;
}

// The sequence run.c fed: the fifth reference line's full ids, first 48.
std::vector<int32_t> fed_ids() {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 5);
  REQUIRE(cases[4].prompt_ids == "1,277,51,190,301,32,468,262,112,22,47,225,217,38,126,49,285,220");
  return std::vector<int32_t>(cases[4].full_ids.begin(), cases[4].full_ids.begin() + kRows);
}

// max |ours - ref| over the row, relative to the row's largest |ref|.
double row_rel_error(const float* ours, const float* ref) {
  double max_diff = 0, max_ref = 0;
  for (int i = 0; i < kVocab; ++i) {
    max_diff = std::max(max_diff, (double)std::fabs(ours[i] - ref[i]));
    max_ref = std::max(max_ref, (double)std::fabs(ref[i]));
  }
  return max_diff / max_ref;
}

std::unique_ptr<tessera::Model> open_model(const std::string& path) {
  tessera::ModelOptions o;
  o.path = path;
  auto m = tessera::Model::open(o);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  return std::move(*m);
}

}  // namespace

TEST_CASE("stories260K logits match run.c within 1e-4 relative, token by token") {
  const auto ref = reference_logits();
  const auto ids = fed_ids();
  auto model = open_model(shared_path("models/stories260K.bin"));
  auto gen = model->start({0.0f, 1.0f, 0, 1});
  REQUIRE(gen.has_value());
  double worst = 0;
  for (int pos = 0; pos < kRows; ++pos) {
    REQUIRE((*gen)->feed(std::span<const int32_t>(&ids[(size_t)pos], 1)).is_ok());
    const auto logits = (*gen)->logits();
    REQUIRE(logits.size() == (size_t)kVocab);
    worst = std::max(worst, row_rel_error(logits.data(), &ref[(size_t)pos * kVocab]));
  }
  MESSAGE("worst row relative error " << worst);
  CHECK(worst <= 1e-4);
}

TEST_CASE("stories260K logits match run.c within 1e-4 relative when the 48 tokens are one prefill") {
  const auto ref = reference_logits();
  const auto ids = fed_ids();
  auto model = open_model(shared_path("models/stories260K.bin"));
  auto session = tessera::Session::create(*model->impl().runner, *model->impl().kv);
  REQUIRE(session.has_value());
  REQUIRE((*session)->feed(ids, /*all_logits=*/true).is_ok());
  const auto& all = (*session)->all_logits();
  REQUIRE(all.size() == ref.size());
  double worst = 0;
  for (int pos = 0; pos < kRows; ++pos) worst = std::max(worst, row_rel_error(&all[(size_t)pos * kVocab], &ref[(size_t)pos * kVocab]));
  MESSAGE("worst row relative error " << worst);
  CHECK(worst <= 1e-4);
}
