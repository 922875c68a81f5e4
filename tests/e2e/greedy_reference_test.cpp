// Every greedy case in ../shared/reference, through the CLI as a user runs it.
#include <doctest/doctest.h>

#include "support/cli.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

namespace {


}  // namespace

TEST_CASE("stories260K: every greedy reference line gives exactly run.c's ids (-n 200, --prompt-ids)") {
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 6);
  for (const auto& c : cases) {
    CAPTURE(c.prompt_ids);
    const auto r = run_tessera({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", c.prompt_ids,
                                "--temp", "0", "-n", "200", "--print-ids"});
    CHECK(join_ids(ids_from_stdout(r)) == join_ids(c.full_ids));
  }
}

TEST_CASE("aidreams260K: every greedy reference line gives run.c's ids and text (-p TEXT, -n 128)") {
  const auto cases = read_text_cases(shared_path("reference/aidreams260K.greedy.tsv"));
  REQUIRE(cases.size() >= 5);
  const std::string model = shared_path("models/aidreams260K.bin"), tok = shared_path("models/aidreams260K.tok512.bin");
  for (const auto& c : cases) {
    CAPTURE(c.prompt_text);
    const auto ids = run_tessera({"run", "-m", model, "-z", tok, "-p", c.prompt_text, "--temp", "0", "-n", "128", "--print-ids"});
    CHECK(join_ids(ids_from_stdout(ids)) == join_ids(c.full_ids));
    const auto text = run_tessera({"run", "-m", model, "-z", tok, "-p", c.prompt_text, "--temp", "0", "-n", "128"});
    REQUIRE_MESSAGE(text.exit_code == 0, text.err);
    REQUIRE(!text.out.empty());
    CHECK(text.out.substr(0, text.out.size() - 1) == c.text);  // the text, then one newline
  }
}
