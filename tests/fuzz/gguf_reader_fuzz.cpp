// libFuzzer target: the GGUF reader (engine/formats/gguf_reader.cpp) on
// arbitrary bytes — header, metadata, tensor infos and their placement —
// then what a loader does with a file that parsed: every key shown and read
// through the typed getters, the tokenizer keys, and the first row of every
// tensor dequantized (its span must lie inside the input). Built by
// tests/fuzz/run_fuzz.sh; a crash, a sanitizer report or an escaping
// exception fails it.
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "core/quant.h"
#include "engine/formats/gguf.h"
#include "engine/models/gguf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  auto f = GgufFile::parse({reinterpret_cast<const std::byte*>(data), size}, "fuzz.gguf");
  if (!f) return 0;
  for (const GgufKv& kv : f->kvs()) {
    (void)kv.value.to_display_string();
    (void)f->get_uint(kv.key);
    (void)f->get_int(kv.key);
    (void)f->get_float(kv.key);
    (void)f->get_string_array(kv.key);
    (void)f->get_f32_array(kv.key);
    (void)f->get_i32_array(kv.key);
  }
  std::set<std::string> consumed;
  (void)read_gguf_tokenizer(*f, &consumed);
  std::vector<float> row;
  for (const GgufTensorInfo& t : f->tensors()) {
    const int64_t n = t.shape.last();
    if (n <= 0 || n > (1 << 16) || t.bytes < bytes_for(t.dtype, n)) continue;
    row.resize((size_t)n);
    dequantize_row(t.dtype, t.data.data(), row.data(), n);
  }
  return 0;
}
