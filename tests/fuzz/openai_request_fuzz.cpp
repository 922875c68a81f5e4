// libFuzzer target: the server's request parser (tools/tessera/openai_request.cpp)
// on arbitrary bytes as either endpoint's body. Built with Debian's clang
// (-fsanitize=fuzzer,address,undefined) by tests/fuzz/run_fuzz.sh, which the
// test suite runs for a bounded time: any crash, sanitizer report or
// exception escaping the parser fails it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/tessera/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera::cli;
  const std::string body(reinterpret_cast<const char*>(data), size);
  RequestLimits limits;
  for (Endpoint ep : {Endpoint::completions, Endpoint::chat_completions}) {
    auto r = parse_openai_request(ep, body, limits);
    if (!r) (void)error_param(r.status().message());
  }
  return 0;
}
