// libFuzzer target: the two files of a Hugging Face folder Tessera parses
// from bytes — the safetensors header (engine/formats/safetensors.cpp) and
// config.json (engine/models/hf_config.cpp) — on the same arbitrary input,
// then every tensor that parsed read through its span and mapped to its GGUF
// name. Built by tests/fuzz/run_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/formats/safetensors.h"
#include "engine/models/hf_config.h"
#include "engine/models/hf_tensor_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  auto st = SafetensorsFile::parse({reinterpret_cast<const std::byte*>(data), size}, "fuzz.safetensors");
  if (st) {
    const HfArchitecture* arch = find_hf_architecture("llama");
    unsigned sum = 0;
    for (const SafetensorsTensor& t : st->tensors()) {
      for (std::byte b : t.data) sum += (unsigned)b;
      (void)safetensors_dtype(t, st->path());
      (void)map_hf_tensor_name(*arch, t.name);
    }
    (void)sum;
  }
  (void)parse_hf_config(std::string_view(reinterpret_cast<const char*>(data), size), "config.json");
  return 0;
}
