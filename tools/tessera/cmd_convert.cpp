// tessera convert: a model (llama2.c .bin, GGUF, or a Hugging Face folder) to GGUF, optionally quantized.
#include <CLI/CLI.hpp>
#include <cstdio>

#include <tessera/model_file.h>

#include "tools/tessera/cli_common.h"

namespace tessera::cli {

namespace {

struct ConvertFlags {
  std::string input, tokenizer, output, type = "f32";
  bool pure = false;
} f;

int convert_main() {
  ConvertOptions o;
  o.input = f.input;
  o.tokenizer_path = f.tokenizer;
  o.output = f.output;
  o.type = f.type;
  o.pure = f.pure;
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
  s->add_option("--type", f.type,
                "a llama.cpp file type, mixed per tensor as llama-quantize does (q4_K_M, q5_K_M, q4_K_S, q5_K_S, q6_K, "
                "q8_0, q4_0, q4_1, q5_0, q5_1, f16, bf16, f32), or a weight type for every 2-D tensor (q4_K, q5_K)");
  s->add_flag("--pure", f.pure, "every 2-D weight in the type's base type, no per-tensor mix (llama-quantize --pure)");
  return {s, convert_main};
}

}  // namespace tessera::cli
