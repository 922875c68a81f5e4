// Bad input through the CLI: a non-zero exit and one line that names the
// file, the field and what was expected. Never a crash or a hang.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include <tessera/tessera.h>

#include "support/cli.h"

using namespace tessera::testing;

namespace {

std::string write_bytes(const std::string& name, const std::string& bytes) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The one error line: exit non-zero, not a signal, every `needles` in the line.
void check_one_line_error(const CliResult& r, const std::vector<std::string>& needles) {
  CAPTURE(r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code < 128);  // not killed by a signal
  const auto lines = r.err_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("tessera: ", 0) == 0);
  for (const auto& n : needles) CHECK_MESSAGE(lines[0].find(n) != std::string::npos, "missing '" << n << "'");
}

std::string stories() { return shared_path("models/stories260K.bin"); }

}  // namespace

TEST_CASE("a missing model file is named") {
  check_one_line_error(run_tessera({"run", "-m", "/nonexistent/model.bin", "--prompt-ids", "1"}), {"/nonexistent/model.bin"});
}

TEST_CASE("-m synthetic[:TYPE] names the bench model where no such file exists, and a wrong TYPE is refused naming the accepted ones") {
  using tessera::synthetic_model_type;
  CHECK(synthetic_model_type("synthetic") == std::optional<std::string>("q8_0"));
  CHECK(synthetic_model_type("synthetic:q4_0") == std::optional<std::string>("q4_0"));
  CHECK(synthetic_model_type("synthetic:") == std::optional<std::string>(""));
  CHECK_FALSE(synthetic_model_type("synthetics.gguf").has_value());
  CHECK_FALSE(synthetic_model_type("model.gguf").has_value());
  CHECK_FALSE(synthetic_model_type("").has_value());
  // A file of that name is a file.
  const std::string file = temp_dir() + "/synthetic:f16";
  CHECK(synthetic_model_type(file) == std::nullopt);
  write_bytes("synthetic:f16", "x");
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(temp_dir());
  CHECK_FALSE(synthetic_model_type("synthetic:f16").has_value());
  std::filesystem::current_path(cwd);

  check_one_line_error(run_tessera({"run", "-m", "synthetic:q9_9", "--prompt-ids", "1"}),
                       {"-m synthetic:q9_9", "expected q8_0, q4_0, f16 or f32"});
  check_one_line_error(run_tessera({"batch", "-m", "synthetic:bf16", "/nonexistent/in.jsonl", "-o", temp_dir() + "/o.jsonl"}),
                       {"/nonexistent/in.jsonl"});
}

TEST_CASE("a truncated llama2.c checkpoint is refused with the expected size") {
  const std::string full = read_file(stories());
  const std::string path = write_bytes("truncated.bin", full.substr(0, full.size() - 1));
  check_one_line_error(run_tessera({"run", "-m", path, "--prompt-ids", "1"}), {"truncated.bin"});
}

TEST_CASE("a file shorter than any header is refused") {
  const std::string path = write_bytes("tiny.bin", "abc");
  check_one_line_error(run_tessera({"run", "-m", path, "--prompt-ids", "1"}), {"tiny.bin"});
}

TEST_CASE("a GGUF with a wrong magic or version is refused naming the field") {
  const std::string gguf = temp_dir() + "/good.gguf";
  REQUIRE(run_tessera({"convert", stories(), "-o", gguf}).exit_code == 0);
  std::string bytes = read_file(gguf);
  std::string bad_version = bytes;
  bad_version[4] = 99;
  check_one_line_error(run_tessera({"run", "-m", write_bytes("version.gguf", bad_version), "--prompt-ids", "1"}), {"version.gguf", "version"});
  std::string truncated = bytes.substr(0, bytes.size() / 2);
  check_one_line_error(run_tessera({"run", "-m", write_bytes("half.gguf", truncated), "--prompt-ids", "1"}), {"half.gguf"});
}

TEST_CASE("a GGUF whose tensor data runs past the end of the file names the tensor") {
  const std::string gguf = temp_dir() + "/good2.gguf";
  REQUIRE(run_tessera({"convert", stories(), "-o", gguf}).exit_code == 0);
  std::string bytes = read_file(gguf);
  // Cut inside the data section: the header parses, the last tensors do not fit.
  const std::string cut = bytes.substr(0, bytes.size() - 4096);
  check_one_line_error(run_tessera({"run", "-m", write_bytes("cut.gguf", cut), "--prompt-ids", "1"}), {"cut.gguf", "tensor"});
}

TEST_CASE("an unknown GGUF architecture is refused naming general.architecture and the supported ones") {
  const std::string gguf = temp_dir() + "/good3.gguf";
  REQUIRE(run_tessera({"convert", stories(), "-o", gguf}).exit_code == 0);
  std::string bytes = read_file(gguf);
  const std::string key = "general.architecture";
  const auto at = bytes.find(key);
  REQUIRE(at != std::string::npos);
  // value: u32 type (8), u64 length (5), "llama" -> "mamba"
  const auto value = bytes.find("llama", at + key.size());
  REQUIRE(value != std::string::npos);
  bytes.replace(value, 5, "mamba");
  check_one_line_error(run_tessera({"run", "-m", write_bytes("arch.gguf", bytes), "--prompt-ids", "1"}),
                       {"arch.gguf", "general.architecture", "mamba", "supported: llama, qwen2, qwen3, gemma2, phi3"});
}

TEST_CASE("token ids outside the vocabulary are refused naming the id") {
  check_one_line_error(run_tessera({"run", "-m", stories(), "--prompt-ids", "1,512", "--temp", "0"}), {"512", "vocabulary"});
  check_one_line_error(run_tessera({"run", "-m", stories(), "--prompt-ids", "1,-3", "--temp", "0"}), {"-3"});
  check_one_line_error(run_tessera({"run", "-m", stories(), "--prompt-ids", "1,x", "--temp", "0"}), {"--prompt-ids", "'x'"});
}

TEST_CASE("a prompt longer than the context is refused") {
  std::string ids = "1";
  for (int i = 0; i < 600; ++i) ids += ",5";  // stories260K's context is 512
  check_one_line_error(run_tessera({"run", "-m", stories(), "--prompt-ids", ids, "--temp", "0"}), {"context"});
  std::string text(2000, 'a');
  check_one_line_error(run_tessera({"run", "-m", shared_path("models/aidreams260K.bin"), "-z",
                                    shared_path("models/aidreams260K.tok512.bin"), "-p", text, "--temp", "0"}),
                       {"context"});
}

TEST_CASE("bad sampling flags name the flag") {
  check_one_line_error(run_tessera({"run", "-m", stories(), "--prompt-ids", "1", "--temp", "-1"}), {"--temp"});
  check_one_line_error(run_tessera({"run", "-m", stories(), "--prompt-ids", "1", "--top-p", "0"}), {"--top-p"});
}

TEST_CASE("a tokenizer whose size disagrees with the model is refused") {
  check_one_line_error(run_tessera({"run", "-m", stories(), "-z", shared_path("models/llama2.tokenizer.bin"), "-p", "hi"}),
                       {"llama2.tokenizer.bin"});
}

TEST_CASE("unknown backends and subcommands are one-line errors") {
  check_one_line_error(run_tessera({"run", "-m", stories(), "--prompt-ids", "1", "--backend", "nosuch"}), {"--backend", "nosuch"});
  check_one_line_error(run_tessera({"frobnicate"}), {});
}

TEST_CASE("an unknown --kv-type is one line naming the flag and the accepted types, on every command that opens a model") {
  const std::string m = stories();
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"run", "-m", m, "--prompt-ids", "1"}, {"serve", "-m", m, "--port", "0"},
        {"batch", "-m", m}, {"bench", "-m", m}, {"ir", "-m", m}}) {
    CAPTURE(cmd[0]);
    std::vector<std::string> args = cmd;
    args.insert(args.end(), {"--kv-type", "q4"});
    check_one_line_error(run_tessera(args), {"--kv-type", "q4", "f32", "f16", "bf16", "q8_0", "fp8_e4m3"});
  }
}

// The 8-bit KV types quantize 32 elements of one head a block: stories260K's heads are 8 wide.
TEST_CASE("--kv-type q8_0 or fp8_e4m3 for a model whose head_dim is not a multiple of 32 is one line naming the flag and head_dim") {
  for (const char* t : {"q8_0", "fp8_e4m3"}) {
    CAPTURE(t);
    check_one_line_error(run_tessera({"run", "-m", stories(), "--prompt-ids", "1", "--kv-type", t}),
                         {"--kv-type", t, "head_dim 8", "multiple of 32"});
    check_one_line_error(run_tessera({"ir", "-m", stories(), "--kv-type", t}), {"--kv-type", t, "head_dim 8"});
  }
}
