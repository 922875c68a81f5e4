// tessera convert: a model (llama2.c .bin, GGUF, or a Hugging Face folder) to GGUF, optionally quantized.
#include <CLI/CLI.hpp>
#include <cstdio>

#include <tessera/model_file.h>

#include "tools/tessera/cli_common.h"

namespace tessera::cli {

namespace {

struct ConvertFlags {
  std::string input, tokenizer, output, type = "f32";
} f;

int convert_main() {
  ConvertOptions o;
  o.input = f.input;
  o.tokenizer_path = f.tokenizer;
  o.output = f.output;
  o.type = f.type;
  std::vector<std::string> notes;
  Status s = convert_model(o, &notes);
  for (const auto& n : notes) std::fprintf(stderr, "tessera: %s\n", n.c_str());
  if (!s.is_ok()) return fail(s);
  std::fprintf(stderr, "tessera: wrote %s (%s)\n", f.output.c_str(), f.type.c_str());
  return 0;
}

}  // namespace

Subcommand add_convert(CLI::App& app) {
  CLI::App* s = app.add_subcommand("convert", "write a model as GGUF");
  s->add_option("input", f.input, "model to read: llama2.c .bin, GGUF, or a Hugging Face folder (config.json, *.safetensors, tokenizer.json)")->required();
  s->add_option("-z,--tokenizer", f.tokenizer, "tokenizer to embed: Hugging Face tokenizer.json or llama2.c tokenizer.bin");
  s->add_option("-o,--output", f.output, "GGUF file to write")->required();
  s->add_option("--type", f.type, "weight type of 2-D tensors: f32, f16, bf16, q8_0, q4_0 (and any type core/quant can quantize)");
  return {s, convert_main};
}

}  // namespace tessera::cli
