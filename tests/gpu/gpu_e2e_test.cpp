// The end-to-end references on the CUDA and ROCm backends, --strict (every
// node on the GPU): run.c's greedy ids for stories260K, and llama.cpp's
// logits for every zoo file (each architecture, the llama in every quantized
// type), with the CPU's bounds. Without a GPU they are reported Skipped.
#include <doctest/doctest.h>

#include "gpu/gpu_requirements.h"
#include "support/cli.h"
#include "support/reference_cases.h"
#include "support/zoo_reference.h"

using namespace tessera::testing;

namespace {

void check_stories_greedy(const std::string& backend) {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 6);
  for (const auto& c : cases) {
    CAPTURE(c.prompt_ids);
    const auto r = run_tessera({"run", "--backend", backend, "--strict", "--print-ids", "-m", shared_path("models/stories260K.bin"),
                                "--prompt-ids", c.prompt_ids, "--temp", "0", "-n", "200"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(join_ids(parse_ids(trim(r.out))) == join_ids(c.full_ids));
  }
}

void check_zoo(const std::string& backend) {
  load_backend(backend);
  for (const ZooFile& z : zoo_files()) {
    CAPTURE(z.name);
    auto m = open_zoo_model(z.name, backend, "default", /*strict=*/true);
    check_zoo_file(z, *m, backend + " --strict", {.greedy_smoke = false});
  }
}

}  // namespace

TEST_CASE("cuda: stories260K gives run.c's greedy ids on every reference line, every node on the GPU" * needs(cuda_gpu())) {
  check_stories_greedy("cuda");
}

TEST_CASE("rocm: stories260K gives run.c's greedy ids on every reference line, every node on the GPU" * needs(rocm_gpu())) {
  check_stories_greedy("rocm");
}

TEST_CASE("cuda: every zoo file matches llama.cpp's logits with every node on the GPU" * needs(cuda_gpu())) { check_zoo("cuda"); }

TEST_CASE("rocm: every zoo file matches llama.cpp's logits with every node on the GPU" * needs(rocm_gpu())) { check_zoo("rocm"); }
