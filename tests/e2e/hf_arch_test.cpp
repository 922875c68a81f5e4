// Hugging Face folders of every architecture, run and converted as a user
// would. There are no such folders in ../shared, so each is made from the
// zoo's f32 GGUF by the test's own inverse of llama.cpp's converter
// (support/hf_export.h). Then `tessera convert DIR` must give back the zoo
// file (its tensors' names, shapes, types and bytes, and its architecture
// keys), and the folder's logits must be the GGUF's at every position of
// llama.cpp's reference sequences (and within the zoo's bounds of llama.cpp's
// own logits), with `tessera run -m DIR` giving llama.cpp's greedy ids.
#include <doctest/doctest.h>

#include <cstring>
#include <set>

#include "core/half.h"
#include "engine/formats/gguf.h"
#include "support/hf_export.h"
#include "support/zoo_reference.h"

using namespace tessera::testing;

namespace {

const char* const kArchs[] = {"llama", "qwen2", "qwen3", "gemma2", "phi3"};

std::string zoo_gguf(const std::string& arch) { return shared_path("models/zoo/" + arch + "-f32.gguf"); }

const ZooFile& zoo_file(const std::string& name) {
  for (const ZooFile& z : zoo_files())
    if (z.name == name) return z;
  FAIL("no zoo file " << name);
  return zoo_files()[0];
}

std::unique_ptr<tessera::Model> open_model(const std::string& path) {
  tessera::ModelOptions o;
  o.path = path;
  o.max_context = 64;
  auto m = tessera::Model::open(o);
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  return std::move(*m);
}

tessera::GgufFile open_gguf(const std::string& path) {
  auto g = tessera::GgufFile::open(path);
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  return std::move(*g);
}

// The keys of `arch` (and general.architecture / file_type): type and bits.
std::map<std::string, std::string> arch_keys(const tessera::GgufFile& g, const std::string& arch) {
  std::map<std::string, std::string> out;
  for (const auto& kv : g.kvs())
    if (kv.key.rfind(arch + ".", 0) == 0 || kv.key == "general.architecture" || kv.key == "general.file_type")
      out[kv.key] = kv.value.type_name() + " " + kv.value.to_display_string() + " bits " + std::to_string(kv.value.bits);
  return out;
}

double nmse(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    den += (double)b[i] * b[i];
  }
  return num / den;
}

}  // namespace

TEST_CASE("tessera convert of each architecture's HF folder writes the zoo GGUF: tensors, types, bytes and architecture keys") {
  for (const std::string arch : kArchs) {
    CAPTURE(arch);
    const std::string dir = temp_dir() + "/hf-" + arch;
    export_hf_folder(zoo_gguf(arch), dir);
    const std::string out = temp_dir() + "/hf-" + arch + "-converted.gguf";
    const auto r = run_tessera({"convert", dir, "-o", out, "--type", "f32"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const auto zoo = open_gguf(zoo_gguf(arch)), mine = open_gguf(out);
    REQUIRE(mine.tensors().size() == zoo.tensors().size());
    for (const auto& t : zoo.tensors()) {
      CAPTURE(t.name);
      const tessera::GgufTensorInfo* m = mine.find_tensor(t.name);
      REQUIRE(m != nullptr);
      CHECK(m->shape == t.shape);
      CHECK(m->ggml_type == t.ggml_type);
      REQUIRE(m->data.size() == t.data.size());
      CHECK(std::memcmp(m->data.data(), t.data.data(), t.data.size()) == 0);
    }
    // The zoo file's architecture keys, each with its type and bits; beyond them only the
    // keys llama.cpp's converter writes that the zoo's writer left out (phi3's window, 0 here).
    const auto want = arch_keys(zoo, arch), got = arch_keys(mine, arch);
    for (const auto& [key, value] : want) {
      CAPTURE(key);
      REQUIRE(got.count(key));
      CHECK(got.at(key) == value);
    }
    std::set<std::string> extra;
    for (const auto& [key, value] : got)
      if (!want.count(key)) extra.insert(key);
    CHECK(extra == (arch == "phi3" ? std::set<std::string>{"phi3.attention.sliding_window"} : std::set<std::string>{}));
    if (arch == "phi3") CHECK(*mine.get_uint("phi3.attention.sliding_window") == 0);
    // No tokenizer.json in the folder: no vocabulary written.
    CHECK_FALSE(mine.has("tokenizer.ggml.tokens"));
  }
}

TEST_CASE("each architecture's HF folder gives its GGUF's logits at every position of llama.cpp's sequences") {
  for (const std::string arch : kArchs) {
    CAPTURE(arch);
    const std::string dir = temp_dir() + "/hf-logits-" + arch;
    export_hf_folder(zoo_gguf(arch), dir);
    auto hf = open_model(dir), gguf = open_model(zoo_gguf(arch));
    CHECK(hf->config().architecture == arch);
    CHECK(hf->config().rope_pairs == "half-split");
    const ZooFile& z = zoo_file(arch + "-f32");
    double worst = 0;
    size_t rows = 0, bit_equal = 0;
    for (const ZooCase& c : zoo_cases(z.name)) {
      CAPTURE(c.index);
      const std::vector<float> a = teacher_forced(*hf, c.full), b = teacher_forced(*gguf, c.full);
      REQUIRE(a.size() == b.size());
      for (size_t r = 0; r < a.size() / kZooVocab; ++r, ++rows) {
        worst = std::max(worst, nmse(&a[r * kZooVocab], &b[r * kZooVocab], kZooVocab));
        bit_equal += std::memcmp(&a[r * kZooVocab], &b[r * kZooVocab], kZooVocab * sizeof(float)) == 0;
      }
      // And against llama.cpp's own logits, within the zoo's bounds for the file.
      check_rows(z, compare_rows(a, c.logits), "HF folder, p" + std::to_string(c.index) + " teacher-forced");
    }
    MESSAGE(arch << ": HF folder against its GGUF, worst row NMSE " << worst << ", " << bit_equal << " of " << rows
                 << " rows bit-equal");
    CHECK(rows > 0);
    CHECK(worst < 1e-10);
    // Same weights, same RoPE order, same graph: the same bits (llama's permuted Q/K rows sum in another order).
    if (arch != "llama") CHECK(bit_equal == rows);
  }
}

TEST_CASE("tessera run -m HF_FOLDER gives llama.cpp's greedy ids for each architecture") {
  for (const std::string arch : kArchs) {
    CAPTURE(arch);
    const std::string dir = temp_dir() + "/hf-run-" + arch;
    export_hf_folder(zoo_gguf(arch), dir);
    const ZooCase c = zoo_cases(arch + "-f32")[0];
    // -n counts positions, as run.c's steps: the prompt's but its last, then one per generated token.
    const auto r = run_tessera({"run", "-m", dir, "--prompt-ids", join_ids(c.prompt), "-n", std::to_string(c.full.size() - 1),
                                "--temp", "0", "--print-ids"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(join_ids(parse_ids(trim(r.out))) == join_ids(c.full));
  }
}

TEST_CASE("a sharded BF16 HF folder runs within the zoo's bf16 bounds and converts to bf16 losslessly") {
  const std::string dir = temp_dir() + "/hf-qwen2-bf16";
  HfExportOptions o;
  o.dtype = "BF16";
  o.shards = 2;
  export_hf_folder(zoo_gguf("qwen2"), dir, o);
  // The zoo README's bound for bf16 weights against llama.cpp's f32 logits.
  const ZooFile bf16{"qwen2-f32", 2e-4, 0.95, false};
  auto hf = open_model(dir);
  for (const ZooCase& c : zoo_cases(bf16.name)) {
    CAPTURE(c.index);
    check_rows(bf16, compare_rows(teacher_forced(*hf, c.full), c.logits), "bf16 HF folder, p" + std::to_string(c.index));
  }
  const std::string out = temp_dir() + "/hf-qwen2-bf16.gguf";
  const auto r = run_tessera({"convert", dir, "-o", out, "--type", "bf16"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto zoo = open_gguf(zoo_gguf("qwen2")), mine = open_gguf(out);
  CHECK(*mine.get_uint("general.file_type") == 32u);
  REQUIRE(mine.tensors().size() == zoo.tensors().size());
  for (const auto& t : zoo.tensors()) {
    CAPTURE(t.name);
    const tessera::GgufTensorInfo* m = mine.find_tensor(t.name);
    REQUIRE(m != nullptr);
    CHECK(m->shape == t.shape);
    // 2-D weights: the zoo's f32 rounded to bf16 once (by the exporter), written as is; 1-D in f32.
    const bool matrix = t.shape.rank == 2;
    CHECK(m->dtype == (matrix ? tessera::DType::bf16 : tessera::DType::f32));
    const size_t n = (size_t)t.shape.numel();
    size_t differing = 0;
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, t.data.data() + i * 4, 4);
      const uint16_t want = tessera::f32_to_bf16(v);
      if (matrix) {
        uint16_t h;
        std::memcpy(&h, m->data.data() + i * 2, 2);
        differing += h != want;
      } else {
        float f;
        std::memcpy(&f, m->data.data() + i * 4, 4);
        differing += f != tessera::bf16_to_f32(want);
      }
    }
    CHECK(differing == 0);
  }
}

TEST_CASE("a llama HF folder with llama3 rope_scaling converts to rope_freqs.weight and runs as that GGUF does") {
  const std::string dir = temp_dir() + "/hf-llama3";
  HfExportOptions o;
  o.config_overrides = {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}};
  export_hf_folder(zoo_gguf("llama"), dir, o);
  const std::string out = temp_dir() + "/hf-llama3.gguf";
  const auto r = run_tessera({"convert", dir, "-o", out, "--type", "f32"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto g = open_gguf(out);
  // As llama.cpp's converter writes it: the factors as a tensor, no rope.scaling keys.
  const tessera::GgufTensorInfo* f = g.find_tensor("rope_freqs.weight");
  REQUIRE(f != nullptr);
  CHECK(f->shape == tessera::Shape{16});
  CHECK_FALSE(g.has("llama.rope.scaling.type"));
  CHECK_FALSE(g.has("llama.rope.scaling.factor"));

  auto hf = open_model(dir), converted = open_model(out), plain = open_model(zoo_gguf("llama"));
  const ZooCase c = zoo_cases("llama-f32")[0];
  const std::vector<float> a = teacher_forced(*hf, c.full), b = teacher_forced(*converted, c.full),
                           unscaled = teacher_forced(*plain, c.full);
  double worst = 0, moved = 0;
  for (size_t row = 0; row < a.size() / kZooVocab; ++row) {
    worst = std::max(worst, nmse(&a[row * kZooVocab], &b[row * kZooVocab], kZooVocab));
    moved = std::max(moved, nmse(&a[row * kZooVocab], &unscaled[row * kZooVocab], kZooVocab));
  }
  MESSAGE("llama3 HF folder against its conversion: worst row NMSE " << worst << "; against the unscaled model " << moved);
  CHECK(worst < 1e-10);
  CHECK(moved > 1e-6);  // the scaling changes the logits: a folder that ignored it would fail above
}

TEST_CASE("run -m refuses an HF folder of an unsupported model_type or rope_scaling in one line naming the key") {
  struct Case {
    nlohmann::json change;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {{{"model_type", "gemma3"}}, {"config.json", "key 'model_type'", "'gemma3'", "supported: llama, mistral, qwen2, qwen3, gemma2, phi3"}},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 512}}}},
       {"config.json", "key 'rope_scaling'", "'yarn'", "supported: default, linear, llama3 (llama and mistral only)"}},
  };
  int i = 0;
  for (const Case& c : cases) {
    CAPTURE(c.change.dump());
    const std::string dir = temp_dir() + "/hf-refused-" + std::to_string(i++);
    HfExportOptions o;
    o.config_overrides = c.change;
    export_hf_folder(zoo_gguf("qwen2"), dir, o);
    for (const std::string cmd : {"run", "convert"}) {
      CAPTURE(cmd);
      std::vector<std::string> args = {cmd, cmd == "run" ? "-m" : dir};
      if (cmd == "run") args.insert(args.end(), {dir, "--prompt-ids", "1,2,3", "-n", "1"});
      else args.insert(args.end(), {"-o", temp_dir() + "/never.gguf"});
      const auto r = run_tessera(args);
      CHECK(r.exit_code != 0);
      CHECK(r.err_lines().size() == 1);
      for (const auto& p : c.parts) CHECK_MESSAGE(r.err.find(p) != std::string::npos, "missing '" << p << "' in " << r.err);
    }
  }
}
