// The CLI on llama.cpp-quantized zoo files: `info` reports bits per weight
// and the per-tensor type mix as the file's headers give them, and
// `run --logits-out` writes the logits llama.cpp computed (within the
// zoo README's per-type bounds), in the reference files' layout.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "engine/formats/gguf.h"
#include "support/cli.h"
#include "support/zoo_reference.h"

using namespace tessera::testing;

namespace {

std::vector<float> read_f32(const std::string& path) {
  const std::string bytes = read_file(path);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

constexpr size_t kVocab = kZooVocab;

}  // namespace

TEST_CASE("info gives bits per weight, each type's share and each role's types for a Q4_K_M mix") {
  const auto r = run_tessera({"info", "-m", shared_path("models/zoo/q-llama-Q4_K_M.gguf")});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  // Bits per weight of the formats themselves: q4_K is 144 bytes per 256
  // weights (4.50), q6_K 210 per 256 (6.5625), f32 32.
  CHECK(r.out.find("q4_K x") != std::string::npos);
  CHECK(r.out.find("4.50 bpw") != std::string::npos);
  CHECK(r.out.find("6.56 bpw") != std::string::npos);
  CHECK(r.out.find("bits per weight") != std::string::npos);
  CHECK(r.out.find("file type  Q4_K_M (general.file_type 15") != std::string::npos);
  // llama.cpp's Q4_K_M gives attn_v and ffn_down q6_K in some layers only.
  std::istringstream lines(r.out);
  bool mixed_role = false;
  for (std::string l; std::getline(lines, l);)
    if (l.find("blk.N.attn_v.weight") != std::string::npos) mixed_role = l.find("q4_K x") != std::string::npos && l.find("q6_K x") != std::string::npos;
  CHECK_MESSAGE(mixed_role, r.out);
}

TEST_CASE("run --logits-out writes llama.cpp's logits of every computed position (prompt rows, then generated)") {
  for (const char* name : {"q-llama-Q4_K_M", "q-llama-Q6_K-pure", "q-llama-f16"}) {
    const ZooFile& z = *std::find_if(zoo_files().begin(), zoo_files().end(), [&](const ZooFile& f) { return f.name == name; });
    CAPTURE(z.name);
    const ZooCase c = zoo_cases(z.name).front();
    const size_t ref_rows = c.logits.size() / kVocab;
    // Teacher forcing: the whole id sequence but its last token as the prompt, no token sampled.
    const std::vector<int32_t> fed(c.full.begin(), c.full.end() - 1);
    const std::string out = temp_dir() + "/zoo_logits.f32";
    const auto r = run_tessera({"run", "-m", shared_path("models/zoo/" + z.name + ".gguf"), "--prompt-ids", join_ids(fed), "-n",
                                std::to_string(ref_rows), "--temp", "0", "--print-ids", "--logits-out", out});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::vector<float> got = read_f32(out);
    REQUIRE(got.size() == c.logits.size());
    check_rows(z, compare_rows(got, c.logits), "run --logits-out, p0 teacher-forced");
  }
  // Generating: P prompt rows, then one per generated token fed back (the last one's are not computed).
  const ZooCase c = zoo_cases("q-llama-Q4_K_M")[1];
  const size_t p = c.prompt.size();
  const std::string out = temp_dir() + "/zoo_logits_gen.f32";
  const auto r = run_tessera({"run", "-m", shared_path("models/zoo/q-llama-Q4_K_M.gguf"), "--prompt-ids", join_ids(c.prompt), "-n", "12",
                              "--temp", "0", "--print-ids", "--logits-out", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const size_t generated = (size_t)std::count(r.out.begin(), r.out.end(), ',') + 1 - p;
  CHECK(generated == 12 - p + 1);
  CHECK(read_f32(out).size() == (p + generated - 1) * kVocab);
}

TEST_CASE("run --logits-out refuses a prompts file and an unwritable path in one line") {
  const std::string model = shared_path("models/zoo/q-llama-Q8_0-pure.gguf");
  const auto many = run_tessera({"run", "-m", model, "--prompt-ids-file", shared_path("reference/zoo/greedy.tsv"), "--logits-out", "/tmp/x.f32"});
  CHECK(many.exit_code != 0);
  CHECK(many.err_lines().size() == 1);
  CHECK(many.err.find("--logits-out") != std::string::npos);
  const auto bad = run_tessera({"run", "-m", model, "--prompt-ids", "1,2,3", "--logits-out", "/nonexistent-dir/x.f32"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("/nonexistent-dir/x.f32") != std::string::npos);
}

TEST_CASE("convert --type q4_K_M / q5_K_M / q6_K of the zoo's f16 llama writes llama-quantize's file: the same tensors, types and bytes") {
  const std::pair<const char*, const char*> cases[] = {
      {"q4_K_M", "q-llama-Q4_K_M.gguf"}, {"q5_K_M", "q-llama-Q5_K_M.gguf"}, {"q5_1", "q-llama-Q5_1-pure.gguf"}};
  for (const auto& [type, want_file] : cases) {
    CAPTURE(std::string(type));
    const std::string out = temp_dir() + "/zoo_convert_" + type + ".gguf";
    std::vector<std::string> args = {"convert", shared_path("models/zoo/q-llama-f16.gguf"), "-o", out, "--type", type};
    if (std::string(want_file).find("-pure") != std::string::npos) args.push_back("--pure");
    const auto r = run_tessera(args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    auto ours = tessera::GgufFile::open(out);
    auto want = tessera::GgufFile::open(shared_path(std::string("models/zoo/") + want_file));
    REQUIRE(ours.has_value());
    REQUIRE(want.has_value());
    REQUIRE(ours->tensors().size() == want->tensors().size());
    for (const auto& w : want->tensors()) {
      CAPTURE(w.name);
      const auto* o = ours->find_tensor(w.name);
      REQUIRE(o != nullptr);
      CHECK(o->dtype == w.dtype);
      CHECK(o->shape.to_string() == w.shape.to_string());
      REQUIRE(o->bytes == w.bytes);
      CHECK(std::memcmp(o->data.data(), w.data.data(), w.bytes) == 0);
    }
    const auto ft_ours = ours->get_uint("general.file_type"), ft_want = want->get_uint("general.file_type");
    REQUIRE(ft_ours.has_value());
    REQUIRE(ft_want.has_value());
    CHECK(*ft_ours == *ft_want);
  }
}
