// A plugin built for another ABI version, other headers or another C++ build
// is refused in one line that names the file and both sides, and tessera
// still runs (core/hal/abi.h). The plugins are tests/plugins/skew_plugin.cpp,
// built once per kind of skew into build/plugins-skew.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/hal/abi_version.h"
#include "support/cli.h"
#include "support/reference_cases.h"

using namespace tessera::testing;
namespace fs = std::filesystem;

namespace {

std::string skew_plugin(const std::string& kind) {
  const std::string bin = TESSERA_BIN;
  return bin.substr(0, bin.rfind("/bin/")) + "/plugins-skew/libtessera-backend-skew-" + kind + ".so";
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

std::string this_side() {
  return "this tessera speaks ABI " + std::to_string(tessera::kBackendAbiVersion) + " (headers " + hex(tessera::kBackendAbiHeadersHash) +
         "); rebuild the plugin";
}

// `tessera devices` with only `kind`'s plugin in a fresh TESSERA_BACKEND_PATH
// directory; the path the plugin was loaded from is returned in `path`.
CliResult devices_with(const std::string& kind, std::string& path) {
  const fs::path dir = fs::path(temp_dir()) / ("skew-" + kind);
  fs::create_directories(dir);
  path = (dir / fs::path(skew_plugin(kind)).filename()).string();
  fs::copy_file(skew_plugin(kind), path, fs::copy_options::overwrite_existing);
  setenv("TESSERA_BACKEND_PATH", dir.c_str(), 1);
  CliResult r = run_tessera({"devices"});
  unsetenv("TESSERA_BACKEND_PATH");
  return r;
}

// The one "plugin not loaded" line for `path`, after its "path: ".
std::string refusal(const CliResult& r, const std::string& path) {
  std::string found;
  int n = 0;
  for (size_t at = 0; (at = r.out.find("plugin not loaded: ", at)) != std::string::npos; ++at) {
    const size_t end = r.out.find('\n', at);
    const std::string line = r.out.substr(at, end - at);
    if (line.find(path + ": ") == std::string::npos) continue;
    ++n;
    found = line.substr(line.find(path + ": ") + path.size() + 2);
  }
  CHECK_MESSAGE(n == 1, "expected one line for " << path << " in:\n" << r.out);
  return found;
}

void check_still_works(const CliResult& r) {
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("cpu:0  ") != std::string::npos);
  // Never listed as a backend: refused before anything but tessera_backend_register ran.
  CHECK(r.out.find("\nskew:") == std::string::npos);
  CHECK(r.out.find("exists to be refused") == std::string::npos);
}

}  // namespace

TEST_CASE("a plugin built for the next ABI version is refused in one line naming both versions and headers") {
  std::string path;
  const auto r = devices_with("newer-abi", path);
  check_still_works(r);
  CHECK(refusal(r, path) == "built for backend ABI " + std::to_string(tessera::kBackendAbiVersion + 1) +
                                " (headers 0123456789abcdef), " + this_side());
}

TEST_CASE("a plugin built from other headers under the same ABI version is refused") {
  std::string path;
  const auto r = devices_with("headers", path);
  check_still_works(r);
  CHECK(refusal(r, path) == "built for backend ABI " + std::to_string(tessera::kBackendAbiVersion) + " (headers " +
                                hex(tessera::kBackendAbiHeadersHash ^ 1) + "), " + this_side());
}

TEST_CASE("a plugin of ABI 1, which answered only its own version, is refused as ABI 1") {
  std::string path;
  const auto r = devices_with("abi-one", path);
  check_still_works(r);
  CHECK(refusal(r, path) == "built for backend ABI 1 (headers not recorded), " + this_side());
}

TEST_CASE("a plugin whose std::string is not this tessera's (another libstdc++ dual ABI) is refused, naming the fields") {
  std::string path;
  const auto r = devices_with("stdlib", path);
  check_still_works(r);
  const std::string line = refusal(r, path);
#if defined(__GLIBCXX__) && _GLIBCXX_USE_CXX11_ABI
  CHECK(line.find("built with standard library ABI 0, sizeof(std::string) 8, ") == 0);
  CHECK(line.find("; this tessera with standard library ABI 1, sizeof(std::string) 32, ") != std::string::npos);
  CHECK(line.find("rebuild the plugin with the same compiler and flags") != std::string::npos);
#else
  MESSAGE("this tessera is not built with libstdc++'s new ABI; the plugin differs in nothing: " << line);
#endif
}

TEST_CASE("with every refused plugin beside it, tessera still runs a model on the cpu") {
  const fs::path dir = fs::path(temp_dir()) / "skew-all";
  fs::create_directories(dir);
  for (const char* kind : {"newer-abi", "headers", "abi-one", "stdlib"})
    fs::copy_file(skew_plugin(kind), dir / fs::path(skew_plugin(kind)).filename(), fs::copy_options::overwrite_existing);
  setenv("TESSERA_BACKEND_PATH", dir.c_str(), 1);
  const auto devices = run_tessera({"devices"});
  const auto run = run_tessera({"run", "-m", shared_path("models/stories260K.bin"), "--prompt-ids", "1,277", "--temp", "0", "-n", "8", "--print-ids"});
  unsetenv("TESSERA_BACKEND_PATH");
  check_still_works(devices);
  size_t refused = 0;
  for (size_t at = 0; (at = devices.out.find("plugin not loaded: " + dir.string(), at)) != std::string::npos; ++at) ++refused;
  CHECK(refused == 4);
  REQUIRE_MESSAGE(run.exit_code == 0, run.err);
  CHECK(trim(run.out).rfind("1,277,", 0) == 0);
}
