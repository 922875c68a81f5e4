// `mpirun -np 2 tessera ... --tensor-parallel 2`: the ranks Open MPI starts,
// rank 0 running the command and rank 1 following it over MPI. The split
// model gives the single process's greedy ids on the reference models and
// every f32 zoo file; a bad split or a missing mpirun is one line and a
// non-zero exit, never a hang (every run is bounded by `timeout`).
// tests/e2e/tensor_parallel_test.cpp holds the split to llama.cpp's logits
// on the whole zoo (ranks as threads).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/cli.h"
#include "support/mpirun.h"
#include "support/reference_cases.h"
#include "support/requirements.h"
#include "support/zoo_reference.h"

using namespace tessera::testing;

namespace {

// `timeout 120 mpirun -np N tessera ARGS` (support/mpirun.h).
CliResult run_mpi(int ranks, const std::vector<std::string>& args) {
  std::vector<std::string> launcher = {"timeout", "120"};
  for (auto& a : mpirun_launcher(ranks)) launcher.push_back(std::move(a));
  return run_tessera_under(launcher, args);
}

// The zoo file's p-th greedy.tsv prompt, 24 steps, in one process and split
// two ways by `split` (--tensor-parallel or --pipeline-parallel): the same ids.
void check_split_matches_single(const std::string& zoo_name, size_t p, const std::string& split) {
  CAPTURE(zoo_name);
  const ZooCase c = zoo_cases(zoo_name)[p];
  const std::vector<std::string> args = {"run", "-m", shared_path("models/zoo/" + zoo_name + ".gguf"), "--prompt-ids", join_ids(c.prompt),
                                         "--temp", "0", "-n", "24", "--print-ids"};
  const auto one = run_tessera(args);
  REQUIRE_MESSAGE(one.exit_code == 0, one.err);
  std::vector<std::string> two_args = args;
  two_args.insert(two_args.end(), {split, "2"});
  const auto two = run_mpi(2, two_args);
  REQUIRE_MESSAGE(two.exit_code == 0, two.err);
  CHECK(join_ids(ids_from_stdout(two)) == join_ids(ids_from_stdout(one)));
}

}  // namespace

TEST_CASE("tensor parallel over MPI: mpirun -np 2 run --tensor-parallel 2 gives run.c's ids on stories260K and the single process's on every f32 zoo file" *
          needs(mpirun_tests())) {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 2);
  for (size_t i = 0; i < 2; ++i) {
    const auto& c = cases[i];
    CAPTURE(c.prompt_ids);
    const auto r = run_mpi(2, {"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", c.prompt_ids, "--temp", "0", "-n",
                               "200", "--print-ids", "--tensor-parallel", "2"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(join_ids(ids_from_stdout(r)) == join_ids(c.full_ids));
  }
  for (const ZooFile& z : zoo_files())
    if (z.exact_greedy) check_split_matches_single(z.name, 0, "--tensor-parallel");
}

TEST_CASE("pipeline parallel over MPI: mpirun -np 2 run --pipeline-parallel 2 gives the single process's ids on every zoo file, and run.c's on stories260K's prompts run concurrently" *
          needs(mpirun_tests())) {
  // Each stage holds its layers whole: the same kernels on the same rows, so the same ids on every file, quantized ones too.
  for (const ZooFile& z : zoo_files()) check_split_matches_single(z.name, 1, "--pipeline-parallel");
  // Every reference prompt at once: the continuous batch's steps cut into micro-batches of whole sequences.
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  const std::string prompts = temp_dir() + "/pp_prompts.txt";
  {
    std::ofstream f(prompts);
    for (const auto& c : cases) f << c.prompt_ids << "\n";
  }
  for (const char* split : {"--pipeline-parallel", "--tensor-parallel"}) {
    CAPTURE(split);
    const auto r = run_mpi(2, {"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids-file", prompts, "--temp", "0", "-n", "200",
                               "--print-ids", split, "2"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    std::stringstream lines(r.out);
    std::string line;
    for (const auto& c : cases) {
      REQUIRE(std::getline(lines, line));
      CHECK(line == join_ids(c.full_ids));
    }
  }
}

TEST_CASE("tensor parallel over MPI: a split that does not fit is one line and a non-zero exit" * needs(mpirun_tests())) {
  const std::string model = shared_path("models/stories260K.bin");
  SUBCASE("without mpirun") {
    const auto r = run_tessera({"run", "-m", model, "--prompt-ids", "1", "-n", "4", "--tensor-parallel", "2"});
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("--tensor-parallel 2: start it with `mpirun -np 2") != std::string::npos);
  }
  SUBCASE("more ranks than mpirun started") {
    const auto r = run_mpi(2, {"run", "-m", model, "--prompt-ids", "1", "-n", "4", "--tensor-parallel", "4"});
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("mpirun started 2 ranks; give -np 4") != std::string::npos);
  }
  SUBCASE("both kinds of split at once") {
    const auto r = run_mpi(2, {"run", "-m", model, "--prompt-ids", "1", "-n", "4", "--tensor-parallel", "2", "--pipeline-parallel", "2"});
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("one kind of split at a time") != std::string::npos);
  }
  SUBCASE("more stages than layers") {
    // The zoo's llama has 2 layers.
    const auto r = run_mpi(3, {"run", "-m", shared_path("models/zoo/llama-f32.gguf"), "--prompt-ids", "1", "-n", "4", "--pipeline-parallel", "3"});
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("the model has 2 layers, fewer than the stages") != std::string::npos);
  }
  SUBCASE("heads that do not divide") {
    // stories260K: 8 heads, 4 KV heads.
    const auto r = run_mpi(3, {"run", "-m", model, "--prompt-ids", "1", "-n", "4", "--tensor-parallel", "3"});
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("does not divide among 3 ranks") != std::string::npos);
  }
}
