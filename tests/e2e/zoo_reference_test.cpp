// The model zoo on the CPU against llama.cpp (../shared/reference/zoo):
// every file of tests/support/zoo_reference.h, every greedy.tsv line, with
// no passes and with the default pipeline. Each line's whole id sequence is
// fed as one prompt (teacher forcing) and every row's logits must be within
// the file's NMSE bound with the argmax agreeing; with the default passes
// the same rows fed one token a step too; and free-running greedy decoding
// gives llama.cpp's ids (exactly, for the f32 files).
#include <doctest/doctest.h>

#include "support/llama3_rope_freqs.h"
#include "support/zoo_reference.h"

using namespace tessera::testing;

namespace {

void check_on_cpu(const ZooFile& z) {
  CAPTURE(z.name);
  for (const std::string passes : {"none", "default"}) {
    CAPTURE(passes);
    auto m = open_zoo_model(z.name, "cpu", passes);
    CHECK(m->placement_notes().empty());
    check_zoo_file(z, *m, "cpu --passes " + passes, {.token_by_token = passes == "default"});
  }
}

}  // namespace

TEST_CASE("zoo: every architecture's logits and greedy ids match llama.cpp on the CPU, with no passes and the default ones") {
  for (const ZooFile& z : zoo_files())
    if (!is_quant_llama(z)) check_on_cpu(z);
}

// One architecture in every weight type llama.cpp's quantizer writes; each
// matmul runs its own type's kernel (a Q4_K_M file mixes q4_K, q5_K and q6_K).
TEST_CASE("zoo: the llama in every quantized type matches llama.cpp's logits row by row on the CPU, with no passes and the default ones") {
  for (const ZooFile& z : zoo_files())
    if (is_quant_llama(z)) check_on_cpu(z);
}

TEST_CASE("zoo: each file reports its architecture") {
  for (const ZooFile& z : zoo_files()) {
    CAPTURE(z.name);
    auto m = open_zoo_model(z.name, "cpu", "default");
    const std::string arch = z.name.substr(0, z.name.find('-'));  // "llama-f32" -> llama; "q-..." files name it second
    CHECK(m->config().architecture == (arch == "q" ? z.name.substr(2, z.name.find('-', 2) - 2) : arch));
  }
}

namespace {

std::vector<float> logits_of(const std::string& path, const std::string& passes, const std::vector<int32_t>& ids) {
  tessera::ModelOptions o;
  o.path = path;
  o.passes = passes;
  o.max_context = 64;
  auto m = tessera::Model::open(o);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  return teacher_forced(**m, ids);
}

}  // namespace

TEST_CASE("llama3's rope_freqs.weight reaches every rope: factors of one change nothing, others change every pipeline alike") {
  const auto ids = zoo_cases("llama-f32")[2].full;
  const std::string base = shared_path("models/zoo/llama-f32.gguf");
  const std::string ones = llama_with_freq_factors(std::vector<float>(16, 1.0f), "ones");
  const std::string scaled = llama_with_freq_factors(ramp_freq_factors(16), "ramp");
  for (const std::string passes : {"none", "default"}) {
    CAPTURE(passes);
    const auto plain = logits_of(base, passes, ids);
    // Dividing by one is the identity, whether the rope reads a folded table or computes on the fly.
    CHECK(logits_of(ones, passes, ids) == plain);
    const auto with_ramp = logits_of(scaled, passes, ids);
    CHECK(whole_nmse(with_ramp, plain) > 1e-6);
    CHECK(whole_nmse(with_ramp, logits_of(scaled, "none", ids)) < 1e-12);
  }
}
