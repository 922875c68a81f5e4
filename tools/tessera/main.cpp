// tessera: the command-line client of the public API (include/tessera/tessera.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/tessera/cli_common.h"

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
  for (const auto& s : subs)
    if (s.app->parsed()) return s.run();
  return 2;
}
