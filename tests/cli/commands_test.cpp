// The CLI's other subcommands do what their help says.
#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "support/cli.h"
#include "support/reference_cases.h"

using namespace tessera::testing;

TEST_CASE("tessera devices lists the cpu backend with its DeviceInfo") {
  const auto r = run_tessera({"devices"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("cpu:0") != std::string::npos);
  CHECK(r.out.find("compute units") != std::string::npos);
  CHECK(r.out.find("memory") != std::string::npos);
}

TEST_CASE("tessera bench --json on a real model prints one object with the documented keys") {
  const auto r = run_tessera({"bench", "-m", shared_path("models/stories260K.bin"), "--json", "--prompt-tokens", "16", "--gen-tokens", "8"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto j = nlohmann::json::parse(trim(r.out));
  for (const char* key : {"device", "prefill_tok_s", "decode_tok_s", "ttft_ms", "tpot_ms", "bytes_per_token", "read_GBps", "mbu",
                          "nodes_per_decode_step", "peak_activation_bytes", "activation_lower_bound_bytes", "decode_tok_s_serial",
                          "host_gap_us", "host_gap_serial_us"})
    CHECK_MESSAGE(j.contains(key), key);
  CHECK(j["decode_tok_s"].get<double>() > 0);
  CHECK(j["read_GBps"].get<double>() > 0);
  CHECK(j["bytes_per_token"].get<uint64_t>() > 0);
  CHECK(j["peak_activation_bytes"].get<uint64_t>() >= j["activation_lower_bound_bytes"].get<uint64_t>());
  // Nodes, as `tessera ir` prints them (one line each, "@device  # label"), copies not counted.
  const auto ir = run_tessera({"ir", "-m", shared_path("models/stories260K.bin")});
  REQUIRE_MESSAGE(ir.exit_code == 0, ir.err);
  size_t nodes = 0;
  std::istringstream lines(ir.out);
  for (std::string l; std::getline(lines, l);)
    if (l.find("  # ") != std::string::npos && l.find(" = copy(") == std::string::npos) ++nodes;
  CHECK(nodes > 0);
  CHECK(j["host_gap_us"].get<double>() > 0);
  // The bench's runner samples greedily on the device: one argmax node more than `tessera ir` shows.
  CHECK(j["nodes_per_decode_step"].get<size_t>() == nodes + 1);
}

TEST_CASE("sampling with a seed is reproducible and -n counts forward passes") {
  const std::vector<std::string> args = {"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1,277,51",
                                         "--temp", "0.8", "--top-p", "0.9", "--seed", "42", "-n", "40", "--print-ids"};
  const auto a = run_tessera(args), b = run_tessera(args);
  REQUIRE_MESSAGE(a.exit_code == 0, a.err);
  CHECK(a.out == b.out);
  const auto ids = parse_ids(trim(a.out));
  CHECK(ids.size() <= 41);
  CHECK(ids[0] == 1);
}
