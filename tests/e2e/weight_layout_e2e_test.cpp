// The rows_x4 and rows_x16 weight layouts end to end: quantized models
// repacked at load give the same greedy ids and the same logits, bit for
// bit, as the standard layout, and `tessera ir` shows which weights were
// repacked and what the cpu prefers.
#include <doctest/doctest.h>

#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "support/cli.h"
#include "support/reference_cases.h"
#include "tessera/tessera.h"

using namespace tessera::testing;

namespace {

std::string convert(const std::string& in, const std::string& type) {
  const std::string out = temp_dir() + "/layout_" + type + "_" + std::to_string(std::hash<std::string>{}(in)) + ".gguf";
  const auto r = run_tessera({"convert", in, "-o", out, "--type", type});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return out;
}

std::string ids_of(const std::vector<std::string>& args) {
  const auto r = run_tessera(args);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return trim(r.out);
}

std::vector<float> logits_of(const std::string& path, const std::string& layout, const std::vector<int32_t>& ids) {
  tessera::ModelOptions o;
  o.path = path;
  o.weight_layout = layout;
  auto m = tessera::Model::open(o);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  auto g = (*m)->start({0.0f, 1.0f, 0, 1});
  REQUIRE(g.has_value());
  std::vector<float> all;
  // One prefill of several tokens (the GEMM path), then decode steps (GEMV).
  REQUIRE((*g)->feed(std::span<const int32_t>(ids.data(), 5)).is_ok());
  all.insert(all.end(), (*g)->logits().begin(), (*g)->logits().end());
  for (size_t i = 5; i < ids.size(); ++i) {
    REQUIRE((*g)->feed(std::span<const int32_t>(&ids[i], 1)).is_ok());
    all.insert(all.end(), (*g)->logits().begin(), (*g)->logits().end());
  }
  return all;
}

}  // namespace

TEST_CASE("stories260K in q8_0 and q4_0: greedy ids with rows_x4 or rows_x16 weights are those without the repack") {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(!cases.empty());
  for (const std::string type : {"q8_0", "q4_0"})
  for (const std::string layout : {"rows_x4", "rows_x16"}) {
    CAPTURE(type);
    CAPTURE(layout);
    const std::string gguf = convert(shared_path("models/stories260K.bin"), type);
    for (size_t i = 0; i < cases.size() && i < 4; ++i) {
      CAPTURE(cases[i].prompt_ids);
      const std::vector<std::string> run = {"run", "-m", gguf, "--prompt-ids", cases[i].prompt_ids, "--temp", "0", "-n", "96", "--print-ids"};
      auto with = run, without = run;
      with.insert(with.end(), {"--weight-layout", layout});
      without.insert(without.end(), {"--passes", "default,-repack_weights"});
      CHECK(ids_of(with) == ids_of(without));
    }
  }
}

TEST_CASE("stories260K in q4_0 and q8_0: logits with rows_x4 or rows_x16 weights equal the standard layout's bit for bit, prefill and decode") {
  const std::vector<int32_t> ids = {1, 403, 407, 261, 378, 121, 30, 296, 261, 470, 30, 13};
  for (const std::string type : {"q4_0", "q8_0"}) {
    const std::string gguf = convert(shared_path("models/stories260K.bin"), type);
    const auto rows = logits_of(gguf, "rows", ids);
    for (const std::string layout : {"rows_x4", "rows_x16"}) {
      CAPTURE(type);
      CAPTURE(layout);
      const auto other = logits_of(gguf, layout, ids);
      REQUIRE(other.size() == rows.size());
      CHECK(std::memcmp(other.data(), rows.data(), other.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("tessera ir --weight-layout rows_x4 repacks the layer weights and the tied embedding table, which the cpu embedding reads") {
  const std::string gguf = convert(shared_path("models/stories260K.bin"), "q8_0");
  const auto r = run_tessera({"ir", "-m", gguf, "--weight-layout", "rows_x4"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("pack=concat_rows(\"blk.0.attn_q.weight\", \"blk.0.attn_k.weight\", \"blk.0.attn_v.weight\"), layout=rows_x4}") !=
        std::string::npos);
  CHECK(r.out.find("\"blk.0.attn_output.weight\" : q8_0[64, 64] {layout=rows_x4}") != std::string::npos);
  CHECK(r.out.find("\"blk.0.ffn_down.weight\" : f16[64, 172]\n") != std::string::npos);  // k = 172 is no q8_0 row: kept f16
  const size_t embd = r.out.find("weight \"token_embd.weight\"");
  REQUIRE(embd != std::string::npos);
  CHECK(r.out.substr(embd, r.out.find('\n', embd) - embd).find("{layout=rows_x4}") != std::string::npos);
  // Unasked, the cpu's preference: rows_x16 where the active ISA family has
  // panel kernels for q8_0 (AVX-512 VNNI), else rows.
  const auto plain = run_tessera({"ir", "-m", gguf});
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.out.find("layout=rows_x4") == std::string::npos);
  const bool x16 = tessera::kernels::cpu::matmul_preferred_layout(tessera::DType::q8_0) == tessera::WeightLayout::rows_x16;
  CHECK((plain.out.find("\"blk.0.attn_output.weight\" : q8_0[64, 64] {layout=rows_x16}") != std::string::npos) == x16);
  const auto bad = run_tessera({"ir", "-m", gguf, "--weight-layout", "cols"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("--weight-layout: 'cols'; expected auto, rows, rows_x4 or rows_x16") != std::string::npos);
}
