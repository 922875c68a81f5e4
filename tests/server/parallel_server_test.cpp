// `mpirun -np 2 tessera serve --tensor-parallel 2` (and --pipeline-parallel
// 2): rank 0 serves the OpenAI API, rank 1 runs its part of every step.
// Requests from several clients at once give run.c's ids.
#include <doctest/doctest.h>

#include <thread>

#include "server/server_process.h"
#include "support/mpirun.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

TEST_CASE("serve under mpirun: rank 0 serves the API of a model split over two ranks, tensor and pipeline, and every client gets run.c's ids") {
  REQUIRE_MESSAGE(have_mpirun(), "mpirun is not installed (tools/quickstart.sh test installs openmpi-bin)");
  const auto cases = read_id_cases(shared_path("reference/stories260K.greedy.txt"));
  REQUIRE(cases.size() >= 4);
  for (const char* split : {"--tensor-parallel", "--pipeline-parallel"}) {
    CAPTURE(split);
    ServerProcess server({"-m", shared_path("models/stories260K.bin"), split, "2"}, mpirun_launcher(2));
    std::vector<std::vector<int32_t>> got(cases.size());
    std::vector<std::string> errors(cases.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < cases.size(); ++i)
      clients.emplace_back([&, i] {
        const auto prompt = parse_ids(cases[i].prompt_ids);
        const json body = {{"prompt", prompt},          {"max_tokens", 201 - prompt.size()},       {"temperature", 0},
                           {"return_token_ids", true}, {"stop_token_ids", json::array({1})}, {"ignore_eos", true}};
        auto c = server.client();
        auto r = c.Post("/v1/completions", body.dump(), "application/json");
        if (!r || r->status != 200) {
          errors[i] = r ? r->body : "no answer";
          return;
        }
        const json answer = json::parse(r->body);
        for (const auto& id : answer["choices"][0]["token_ids"]) got[i].push_back(id.get<int32_t>());
      });
    for (auto& t : clients) t.join();
    for (size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(cases[i].prompt_ids);
      REQUIRE_MESSAGE(errors[i].empty(), errors[i]);
      const auto prompt = parse_ids(cases[i].prompt_ids);
      CHECK(join_ids(got[i]) == join_ids(std::vector<int32_t>(cases[i].full_ids.begin() + (ptrdiff_t)prompt.size(), cases[i].full_ids.end())));
    }
    server.stop();
  }
}
