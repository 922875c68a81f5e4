// Our quantizers (core/quant) against llama.cpp's `llama-quantize` (no
// importance matrix): the zoo's quantized files were made by it from
// q-llama-f16.gguf, so quantizing that file's tensors must give the very
// same blocks, byte for byte, for every tensor of every *-pure file whose
// type we write.
#include <cstring>
#include <string>
#include <vector>

#include "core/quant.h"
#include "engine/formats/gguf.h"
#include "engine/formats/quant_mix.h"
#include "format_test_util.h"

namespace tessera::testing {
namespace {

TEST_CASE("quantizing q-llama-f16 gives llama-quantize's blocks byte for byte (q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K)") {
  auto src = GgufFile::open(shared_path("models/zoo/q-llama-f16.gguf"));
  REQUIRE_MESSAGE(src.has_value(), src.status().message());
  const std::pair<const char*, DType> files[] = {
      {"q-llama-Q8_0-pure", DType::q8_0},   {"q-llama-Q4_0-pure", DType::q4_0},   {"q-llama-Q4_1-pure", DType::q4_1},
      {"q-llama-Q5_0-pure", DType::q5_0},   {"q-llama-Q5_1-pure", DType::q5_1},   {"q-llama-Q4_K_M-pure", DType::q4_K},
      {"q-llama-Q5_K_M-pure", DType::q5_K}, {"q-llama-Q6_K-pure", DType::q6_K},
  };
  for (const auto& [file, type] : files) {
    CAPTURE(std::string(file));
    auto q = GgufFile::open(shared_path(std::string("models/zoo/") + file + ".gguf"));
    REQUIRE_MESSAGE(q.has_value(), q.status().message());
    int checked = 0;
    for (const GgufTensorInfo& t : q->tensors()) {
      if (t.dtype != type) continue;  // norms stay f32
      CAPTURE(t.name);
      const GgufTensorInfo* s = src->find_tensor(t.name);
      REQUIRE(s != nullptr);
      const int64_t n = s->shape.numel();
      std::vector<float> x((size_t)n);
      dequantize_row(s->dtype, s->data.data(), x.data(), n);  // llama-quantize widens f16 to f32 first
      std::vector<std::byte> ours(bytes_for(type, n));
      REQUIRE(quantize_row(type, x.data(), ours.data(), n));
      REQUIRE(ours.size() == t.bytes);
      size_t first = 0;
      while (first < ours.size() && ours[first] == t.data[first]) ++first;
      CHECK_MESSAGE(first == ours.size(), "first differing byte " << first << " of " << ours.size() << " (block "
                                                                  << first / traits(type).block_bytes << ")");
      ++checked;
    }
    CHECK(checked > 0);
  }
}

TEST_CASE("the per-tensor types of llama.cpp's Q4_K_M and Q5_K_M mixes, and of --pure files, are chosen as llama-quantize chose them") {
  struct Case {
    const char* file;
    const char* type;
    bool pure;
  };
  const Case cases[] = {
      {"q-llama-Q4_K_M", "q4_K_M", false},  {"q-llama-Q5_K_M", "q5_K_M", false}, {"q-qwen2-Q4_K_M", "Q4_K_M", false},
      {"q-gemma2-Q4_K_M", "q4_k_m", false}, {"q-phi3-Q4_K_M", "q4_K_M", false},  {"q-llama-Q4_K_M-pure", "q4_K_M", true},
      {"q-llama-Q6_K-pure", "q6_K", true},  {"q-llama-Q5_1-pure", "q5_1", true},  {"q-llama-Q8_0-pure", "q8_0", true},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.file));
    auto f = GgufFile::open(shared_path(std::string("models/zoo/") + c.file + ".gguf"));
    REQUIRE_MESSAGE(f.has_value(), f.status().message());
    const auto ft = quant_file_type(c.type);
    REQUIRE(ft.has_value());
    auto arch = f->get_string("general.architecture");
    REQUIRE(arch.has_value());
    auto layers = f->get_uint(*arch + ".block_count");
    REQUIRE(layers.has_value());
    std::vector<TensorToWrite> tensors;
    for (const GgufTensorInfo& t : f->tensors()) tensors.push_back({t.name, t.shape});
    const std::vector<DType> chosen = choose_tensor_types(*ft, tensors, {(int32_t)*layers, c.pure});
    REQUIRE(chosen.size() == tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      CAPTURE(tensors[i].name);
      CHECK(std::string(name(chosen[i])) == std::string(name(f->tensors()[i].dtype)));
    }
  }
  CHECK_FALSE(quant_file_type("q3_K_M").has_value());  // no q3_K quantizer: refused, not approximated
}

}  // namespace
}  // namespace tessera::testing
