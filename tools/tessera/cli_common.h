#pragma once
// What every subcommand shares: the one-line error convention and small
// argument parsers.
#include <cstdint>
#include <string>
#include <vector>

#include <tessera/status.h>

namespace CLI {
class App;
}

namespace tessera::cli {

// Prints "tessera: <message>" on stderr and returns the exit code for it.
int fail(const Status& s);

// "1,2,3" -> ids; an error names the flag and the bad element.
Expected<std::vector<int32_t>> parse_id_list(const std::string& flag, const std::string& text);

// Each subcommand adds itself to the app and returns the function that runs it.
using Runner = int (*)();
struct Subcommand {
  CLI::App* app;
  Runner run;
};
Subcommand add_run(CLI::App& app);
Subcommand add_convert(CLI::App& app);
Subcommand add_devices(CLI::App& app);
Subcommand add_bench(CLI::App& app);
Subcommand add_info(CLI::App& app);
Subcommand add_tokenize(CLI::App& app);
Subcommand add_ir(CLI::App& app);
Subcommand add_serve(CLI::App& app);
Subcommand add_batch(CLI::App& app);
Subcommand add_template(CLI::App& app);
// `bench serve`, a subcommand of `bench`, and what runs it.
CLI::App* add_bench_serve(CLI::App& bench);
int bench_serve_main();

}  // namespace tessera::cli
