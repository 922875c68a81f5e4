// Docs that show code show the code the tests run.
#include <doctest/doctest.h>

#include "support/cli.h"

using namespace tessera::testing;

TEST_CASE("docs/api.md shows tests/api/api_example.cpp exactly") {
  const std::string doc = read_file(std::string(TESSERA_SOURCE_DIR) + "/docs/api.md");
  const std::string program = read_file(std::string(TESSERA_SOURCE_DIR) + "/tests/api/api_example.cpp");
  REQUIRE(!program.empty());
  CHECK(doc.find("```cpp\n" + program + "```") != std::string::npos);
}
