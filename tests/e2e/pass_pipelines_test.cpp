// Every end-to-end greedy case in ../shared/reference gives the reference ids
// with the default passes, with none, and with each fusion disabled on its
// own: fusion changes how a step is dispatched, never what it computes. The
// folded RoPE tables too: with fold_constants, without it, and on its own
// (unfused ropes reading the table).
#include <doctest/doctest.h>

#include <fstream>

#include "support/cli.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

namespace {

const char* const kPipelines[] = {"default", "none", "default,-fuse_qkv", "default,-fuse_gate_up",
                                  "default,-fuse_matmul_residual", "default,-fuse_rope_kv_append",
                                  "default,-fuse_residual_norm", "default,-fold_constants", "fold_constants",
                                  "default,-fuse_matmul_epilogue", "default,-fuse_elementwise",
                                  // the epilogue takes the residual adds fuse_matmul_residual would have
                                  "default,-fuse_matmul_residual,-fuse_residual_norm"};

std::string ids_of(const std::vector<std::string>& args) {
  const auto r = run_tessera(args);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return trim(r.out);
}

}  // namespace

TEST_CASE("stories260K: every greedy reference line, under every pass pipeline") {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(!cases.empty());
  for (const std::string passes : kPipelines) {
    CAPTURE(passes);
    for (const auto& c : cases) {
      CAPTURE(c.prompt_ids);
      CHECK(ids_of({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", c.prompt_ids, "--temp", "0", "-n",
                    "200", "--print-ids", "--passes", passes}) == join_ids(c.full_ids));
    }
  }
}

TEST_CASE("aidreams260K: every greedy reference line, under every pass pipeline") {
  const auto cases = read_text_cases(shared_path("reference/aidreams260K.greedy.tsv"));
  REQUIRE(!cases.empty());
  const std::string model = shared_path("models/aidreams260K.bin"), tok = shared_path("models/aidreams260K.tok512.bin");
  for (const std::string passes : kPipelines) {
    CAPTURE(passes);
    for (const auto& c : cases) {
      CAPTURE(c.prompt_text);
      CHECK(ids_of({"run", "-m", model, "-z", tok, "-p", c.prompt_text, "--temp", "0", "-n", "128", "--print-ids",
                    "--passes", passes}) == join_ids(c.full_ids));
    }
  }
}

TEST_CASE("llama-2-tiny-random GGUF: every greedy reference line, under every pass pipeline") {
  const auto cases = read_text_cases(shared_path("reference/llama-2-tiny-random.greedy.tsv"));
  REQUIRE(!cases.empty());
  for (const std::string passes : kPipelines) {
    CAPTURE(passes);
    for (const auto& c : cases) {
      CAPTURE(c.prompt_text);
      CHECK(ids_of({"run", "-m", shared_path("models/llama-2-tiny-random.gguf"), "-z", shared_path("models/llama2.tokenizer.bin"),
                    "-p", c.prompt_text, "--temp", "0", "-n", std::to_string(c.full_ids.size() - 1), "--print-ids", "--passes",
                    passes}) == join_ids(c.full_ids));
    }
  }
}

TEST_CASE("stories260K: the reference ids with tiles overridden to odd sizes") {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(!cases.empty());
  for (const auto& c : cases) {
    CAPTURE(c.prompt_ids);
    CHECK(ids_of({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", c.prompt_ids, "--temp", "0", "-n", "200",
                  "--print-ids", "--tile", "*.chunk_bytes=1024,*.weight_block_bytes=2048"}) == join_ids(c.full_ids));
  }
}

TEST_CASE("stories260K: the reference ids with --batch-invariant, and tessera ir --batch-invariant marks the matmuls and attention") {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(!cases.empty());
  for (const auto& c : cases) {
    CAPTURE(c.prompt_ids);
    CHECK(ids_of({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", c.prompt_ids, "--temp", "0", "-n", "200",
                  "--print-ids", "--batch-invariant"}) == join_ids(c.full_ids));
  }
  const auto ir = run_tessera({"ir", "-m", shared_path("models/stories260K.bin"), "--batch-invariant"});
  REQUIRE_MESSAGE(ir.exit_code == 0, ir.err);
  for (const char* op : {"matmul_qkv(", "paged_attention("}) {
    CAPTURE(op);
    const size_t at = ir.out.find(op);
    REQUIRE(at != std::string::npos);
    CHECK(ir.out.substr(at, ir.out.find('\n', at) - at).find("batch_invariant=1") != std::string::npos);
  }
}

TEST_CASE("an unknown pass is refused with one line naming the flag") {
  const auto r = run_tessera({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1", "--temp", "0", "-n", "4",
                              "--print-ids", "--passes", "default,fuse_everything"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("tessera: --passes: 'fuse_everything' is not a pass") == 0);
}

TEST_CASE("tessera ir prints the fused graph, and --parse reads it back to the same text") {
  const auto printed = run_tessera({"ir", "-m", shared_path("models/stories260K.bin")});
  REQUIRE_MESSAGE(printed.exit_code == 0, printed.err);
  CHECK(printed.out.find("matmul_qkv(") != std::string::npos);
  CHECK(printed.out.find("pack=concat_rows(\"blk.0.attn_q.weight\", \"blk.0.attn_k.weight\", \"blk.0.attn_v.weight\")") != std::string::npos);
  const std::string path = "pass_pipelines_ir.txt";
  {
    std::ofstream f(path, std::ios::binary);
    f << printed.out;
  }
  const auto back = run_tessera({"ir", "--parse", path});
  REQUIRE_MESSAGE(back.exit_code == 0, back.err);
  CHECK(back.out == printed.out);
  const auto timed = run_tessera({"ir", "-m", shared_path("models/stories260K.bin"), "--passes", "none", "--print-after-all", "--time-passes"});
  REQUIRE(timed.exit_code == 0);
  CHECK(timed.err.find("time-passes: total") != std::string::npos);
}
