// libFuzzer target: the tokenizer.json loader (engine/tokenizer/
// tokenizer_json.cpp) on arbitrary bytes as the file's content, and, for a
// vocabulary it accepts, the tokenizer built from it encoding and decoding a
// short text. Built by tests/fuzz/run_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  // A folder that does not exist: no tokenizer_config.json is read beside it.
  auto d = read_hf_tokenizer_json_text("/nonexistent/fuzz/tokenizer.json",
                                       std::string_view(reinterpret_cast<const char*>(data), size));
  if (!d) return 0;
  auto tok = Tokenizer::from_data(std::move(*d), "fuzz tokenizer.json");
  if (!tok) return 0;
  const auto ids = tok->encode("Hello ab\n a</s>", EncodeOptions{true, true, true});
  (void)tok->detokenize(ids, true);
  return 0;
}
