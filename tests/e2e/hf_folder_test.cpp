// A Hugging Face folder (config.json + model.safetensors, Q/K rows in HF's
// half-split RoPE order) run and converted as a user would: the same greedy
// ids as run.c computed on its GGUF twin, logits matching the twin's step
// for step, and `tessera convert DIR` writing the tensors and metadata that
// llama.cpp's converter wrote into the twin.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/quant.h"
#include "engine/formats/gguf.h"
#include "support/cli.h"
#include "support/reference_cases.h"
#include "tessera/tessera.h"

using namespace tessera::testing;

namespace {
const std::string kHfDir = shared_path("models/llama-2-tiny-random-hf");
const std::string kTwin = shared_path("models/llama-2-tiny-random.gguf");
const std::string kTokenizer = shared_path("models/llama2.tokenizer.bin");

std::vector<GreedyCase> tiny_cases() {
  const auto cases = read_text_cases(shared_path("reference/llama-2-tiny-random.greedy.tsv"));
  REQUIRE(cases.size() >= 3);
  return cases;
}

std::vector<float> tensor_values(const tessera::GgufTensorInfo& t) {
  std::vector<float> out((size_t)t.shape.numel());
  const int64_t n = t.shape.last(), rows = t.shape.numel() / n;
  const uint64_t row_bytes = tessera::bytes_for(t.dtype, n);
  for (int64_t r = 0; r < rows; ++r)
    tessera::dequantize_row(t.dtype, t.data.data() + r * row_bytes, out.data() + r * n, n);
  return out;
}
}  // namespace

TEST_CASE("tessera run -m HF_FOLDER gives run.c's greedy ids for every tiny-random reference line") {
  for (const auto& c : tiny_cases()) {
    CAPTURE(c.prompt_text);
    const auto r = run_tessera({"run", "-m", kHfDir, "-z", kTokenizer, "-p", c.prompt_text, "--temp", "0", "-n", "64",
                                "--print-ids"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(join_ids(parse_ids(trim(r.out))) == join_ids(c.full_ids));
  }
}

TEST_CASE("the HF folder's logits match its GGUF twin's at every step of the reference continuations (NMSE < 1e-10)") {
  auto open = [](const std::string& path) {
    tessera::ModelOptions o;
    o.path = path;
    auto m = tessera::Model::open(o);
    REQUIRE_MESSAGE(m.has_value(), m.status().message());
    return std::move(*m);
  };
  auto hf = open(kHfDir), twin = open(kTwin);
  CHECK(hf->config().rope_pairs == "half-split");
  double worst = 0;
  int steps = 0;
  for (const auto& c : tiny_cases()) {
    auto a = hf->start({0.0f, 1.0f, 0, 1});
    auto b = twin->start({0.0f, 1.0f, 0, 1});
    REQUIRE((a.has_value() && b.has_value()));
    for (size_t i = 0; i + 1 < c.full_ids.size(); ++i) {
      const int32_t id = c.full_ids[i];
      REQUIRE((*a)->feed(std::span<const int32_t>(&id, 1)).is_ok());
      REQUIRE((*b)->feed(std::span<const int32_t>(&id, 1)).is_ok());
      const auto x = (*b)->logits(), y = (*a)->logits();
      REQUIRE(x.size() == y.size());
      double err = 0, ref = 0;
      for (size_t k = 0; k < x.size(); ++k) {
        err += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
        ref += (double)x[k] * x[k];
      }
      worst = std::max(worst, err / ref);
      ++steps;
    }
  }
  MESSAGE("worst logits NMSE, HF folder against the GGUF twin: " << worst << " over " << steps << " steps");
  CHECK(steps == 192);
  CHECK(worst < 1e-10);
}

TEST_CASE("tessera convert HF_FOLDER writes the tensors and llama metadata of llama.cpp's converter (f16 and f32)") {
  const auto twin = tessera::GgufFile::open(kTwin);
  REQUIRE_MESSAGE(twin.has_value(), twin.status().message());
  for (const std::string type : {"f16", "f32"}) {
    CAPTURE(type);
    const std::string out = temp_dir() + "/tiny_from_hf_" + type + ".gguf";
    const auto c = run_tessera({"convert", kHfDir, "-o", out, "--type", type});
    REQUIRE_MESSAGE(c.exit_code == 0, c.err);
    const auto g = tessera::GgufFile::open(out);
    REQUIRE_MESSAGE(g.has_value(), g.status().message());
    REQUIRE(g->tensors().size() == twin->tensors().size());
    for (const auto& t : twin->tensors()) {
      CAPTURE(t.name);
      const tessera::GgufTensorInfo* mine = g->find_tensor(t.name);
      REQUIRE(mine != nullptr);
      CHECK(mine->shape == t.shape);
      // The twin is f16 (norms f32): f16 output has its types, f32 output its values widened.
      if (type == "f16") CHECK(mine->dtype == t.dtype);
      CHECK(tensor_values(*mine) == tensor_values(t));
    }
    for (const char* key : {"llama.context_length", "llama.embedding_length", "llama.block_count",
                            "llama.feed_forward_length", "llama.rope.dimension_count", "llama.attention.head_count",
                            "llama.attention.head_count_kv"}) {
      CAPTURE(key);
      CHECK(*g->get_uint(key) == *twin->get_uint(key));
    }
    CHECK(*g->get_float("llama.attention.layer_norm_rms_epsilon") == *twin->get_float("llama.attention.layer_norm_rms_epsilon"));
    // The twin leaves freq_base at llama.cpp's default, 10000, which config.json states.
    CHECK_FALSE(twin->has("llama.rope.freq_base"));
    CHECK(*g->get_float("llama.rope.freq_base") == 10000.0);
    CHECK(*g->get_string("general.architecture") == "llama");
    CHECK(*g->get_uint("general.file_type") == (type == "f16" ? 1u : 0u));
    // The folder has no tokenizer.json: none is written, and the GGUF runs with llama2.c's tokenizer to run.c's ids.
    CHECK_FALSE(g->has("tokenizer.ggml.tokens"));
    const GreedyCase first = tiny_cases()[0];
    const auto r = run_tessera({"run", "-m", out, "-z", kTokenizer, "-p", first.prompt_text, "--temp", "0", "-n", "64", "--print-ids"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(join_ids(parse_ids(trim(r.out))) == join_ids(first.full_ids));
  }
}

TEST_CASE("an HF folder's tokenizer.json and chat template are used by run and embedded by convert") {
  // A hand-made SentencePiece-style tokenizer.json: <unk> <s> </s>, the 256 byte pieces, then ▁Hello (259) and
  // ▁world (260) made by merges; "Hello world" must encode as BOS, 259, 260. The model's 32,000 rows are padded.
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    vocab[piece] = 3 + b;
  }
  const std::string hello = "\xe2\x96\x81Hello", world = "\xe2\x96\x81world";
  vocab[hello] = 259;
  vocab[world] = 260;
  std::vector<std::string> merges;
  for (const std::string& w : {hello, world}) {
    // Every piece of the word is built left to right from bytes that exist only as merges' inputs.
    std::string left = "\xe2\x96\x81";
    for (size_t i = 3; i < w.size(); ++i) {
      const std::string right(1, w[i]);
      if (!vocab.contains(right)) vocab[right] = (int)vocab.size();
      if (!vocab.contains(left + right)) vocab[left + right] = (int)vocab.size();
      merges.push_back(left + " " + right);
      left += right;
    }
  }
  if (!vocab.contains("\xe2\x96\x81")) vocab["\xe2\x96\x81"] = (int)vocab.size();
  // The ids above were handed out in order: ▁Hello and ▁world keep 259 and 260 only if assigned first.
  REQUIRE(vocab[hello] == 259);
  REQUIRE(vocab[world] == 260);
  const nlohmann::json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", {{{"id", 0}, {"content", "<unk>"}, {"special", true}}, {{"id", 1}, {"content", "<s>"}, {"special", true}},
                        {{"id", 2}, {"content", "</s>"}, {"special", true}}}},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", "\xe2\x96\x81"}},
                                                           {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xe2\x96\x81"}}}}}},
      {"pre_tokenizer", nullptr},
      {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"byte_fallback", true}, {"vocab", vocab}, {"merges", merges}}}};
  const std::string dir = temp_dir() + "/hf_with_tokenizer";
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"})
    std::filesystem::copy_file(kHfDir + "/" + f, dir + "/" + f, std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir + "/tokenizer.json") << tokenizer.dump();
  const std::string chat = "{% for m in messages %}[{{ m.content }}]{% endfor %}";
  std::ofstream(dir + "/tokenizer_config.json") << nlohmann::json{{"chat_template", chat}, {"add_bos_token", true}}.dump();

  const auto t = run_tessera({"tokenize", "-m", dir, "-p", "Hello world"});
  REQUIRE_MESSAGE(t.exit_code == 0, t.err);
  CHECK(trim(t.out) == "1,259,260");
  const auto r = run_tessera({"run", "-m", dir, "-p", "Hello world", "--temp", "0", "-n", "4", "--print-ids"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(trim(r.out).rfind("1,259,260,", 0) == 0);

  const std::string out = temp_dir() + "/tiny_hf_tok.gguf";
  const auto c = run_tessera({"convert", dir, "-o", out, "--type", "f16"});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  const auto from_gguf = run_tessera({"tokenize", "-m", out, "-p", "Hello world"});
  REQUIRE_MESSAGE(from_gguf.exit_code == 0, from_gguf.err);
  CHECK(trim(from_gguf.out) == "1,259,260");
  const auto g = tessera::GgufFile::open(out);
  REQUIRE(g.has_value());
  CHECK(*g->get_string("tokenizer.chat_template") == chat);
  CHECK(g->get_string_array("tokenizer.ggml.tokens")->size() == 32000);  // padded to vocab_size with [PADn]
}

TEST_CASE("convert refuses a type it cannot write (q3_K: no quantizer), in one line naming the ones it can") {
  const auto r = run_tessera({"convert", kHfDir, "-o", temp_dir() + "/never.gguf", "--type", "q3_K"});
  CHECK(r.exit_code != 0);
  REQUIRE(r.err_lines().size() == 1);
  CHECK(r.err.find("q3_K") != std::string::npos);
  CHECK(r.err.find("q4_K_M") != std::string::npos);
  CHECK(r.err.find("q8_0") != std::string::npos);
}
