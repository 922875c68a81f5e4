// tessera convert: a model (llama2.c .bin or GGUF) to GGUF, optionally quantized.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "engine/formats/convert.h"
#include "engine/models/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/tessera/cli_common.h"

namespace tessera::cli {

namespace {

struct ConvertFlags {
  std::string input, tokenizer, output, type = "f32";
} f;

int convert_main() {
  auto type = dtype_from_name(f.type);
  if (!type || (*type != DType::f32 && *type != DType::f16 && *type != DType::q8_0 && *type != DType::q4_0))
    return fail(invalid_argument("--type: '" + f.type + "'; expected f32, f16, q8_0 or q4_0"));
  auto weights = load_model(f.input);
  if (!weights) return fail(weights.status());
  std::optional<TokenizerData> tok = weights->tokenizer;
  if (!f.tokenizer.empty()) {
    auto t = Tokenizer::load_file(f.tokenizer, weights->config.vocab_size);
    if (!t) return fail(t.status());
    if (t->vocab_size() > weights->config.vocab_size)
      return fail(invalid_argument("-z " + f.tokenizer + ": tokenizer has " + std::to_string(t->vocab_size()) +
                                   " tokens; the model's vocab_size is " + std::to_string(weights->config.vocab_size)));
    tok = t->data();
  }
  std::vector<std::string> notes;
  Status s = write_model_gguf(*weights, tok ? &*tok : nullptr, *type, f.output, &notes);
  for (const auto& n : notes) std::fprintf(stderr, "tessera: %s\n", n.c_str());
  if (!s.is_ok()) return fail(s);
  std::fprintf(stderr, "tessera: wrote %s (%s)\n", f.output.c_str(), f.type.c_str());
  return 0;
}

}  // namespace

Subcommand add_convert(CLI::App& app) {
  CLI::App* s = app.add_subcommand("convert", "write a model as GGUF");
  s->add_option("input", f.input, "model to read (llama2.c .bin or GGUF)")->required();
  s->add_option("-z,--tokenizer", f.tokenizer, "tokenizer to embed: Hugging Face tokenizer.json or llama2.c tokenizer.bin");
  s->add_option("-o,--output", f.output, "GGUF file to write")->required();
  s->add_option("--type", f.type, "weight type: f32, f16, q8_0, q4_0");
  return {s, convert_main};
}

}  // namespace tessera::cli
