// tessera: the command-line client of the public API (include/tessera/tessera.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/tessera/cli_common.h"
#include "tools/tessera/engine_flags.h"

int main(int argc, char** argv) {
  using namespace tessera::cli;
  CLI::App app{"tessera: LLM inference runtime"};
  app.require_subcommand(1);
  std::vector<Subcommand> subs = {add_run(app), add_convert(app), add_devices(app), add_bench(app), add_ir(app),
                                  add_info(app), add_tokenize(app), add_serve(app), add_batch(app), add_template(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tessera: %s\n", e.what());
    return 2;
  }
  // Under mpirun, the ranks other than 0 follow rank 0's runners rather than run the command.
  if (parallel_requested() && tessera::launched_rank() > 0) {
    const tessera::Status st = tessera::follow_rank0();
    if (!st.is_ok()) {
      std::fprintf(stderr, "tessera: rank %d: %s\n", tessera::launched_rank(), st.message().c_str());
      tessera::abort_ranks(1);
      return 1;
    }
    return 0;
  }
  for (const auto& s : subs)
    if (s.app->parsed()) {
      const int rc = s.run();
      if (rc != 0 && parallel_requested()) tessera::abort_ranks(rc);  // the followers would wait for rank 0 forever
      return rc;
    }
  return 2;
}
