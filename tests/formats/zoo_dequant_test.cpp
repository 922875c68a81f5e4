// Every quant type's dequantizer (core/quant.h, the definition the kernels
// are held to) against llama.cpp's own: blk.0.attn_q.weight of each zoo file,
// dequantized by gguf-py, must come out bit for bit the same. A block layout,
// a scale packing or a rounding order that differs shows up here exactly.
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/quant.h"
#include "engine/formats/gguf.h"
#include "format_test_util.h"

namespace tessera::testing {
namespace {

struct ZooDequantCase {
  const char* file;  // under models/zoo, without .gguf
  DType type;        // what blk.0.attn_q.weight holds
};

// One row per reference; the Q4_K_M mixes keep attn_q in q4_K.
constexpr ZooDequantCase kCases[] = {
    {"q-llama-Q8_0-pure", DType::q8_0},     {"q-llama-Q4_0-pure", DType::q4_0},
    {"q-llama-Q4_1-pure", DType::q4_1},     {"q-llama-Q5_0-pure", DType::q5_0},
    {"q-llama-Q5_1-pure", DType::q5_1},     {"q-llama-Q2_K-pure", DType::q2_K},
    {"q-llama-Q3_K_M-pure", DType::q3_K},   {"q-llama-Q4_K_M-pure", DType::q4_K},
    {"q-llama-Q5_K_M-pure", DType::q5_K},   {"q-llama-Q6_K-pure", DType::q6_K},
    {"q-llama-IQ4_NL-pure", DType::iq4_nl}, {"q-llama-IQ4_XS-pure", DType::iq4_xs},
    {"q-llama-BF16-pure", DType::bf16},     {"q-llama-Q4_K_M", DType::q4_K},
    {"q-llama-Q5_K_M", DType::q5_K},
};

TEST_CASE("every zoo quant type dequantizes blk.0.attn_q.weight bit for bit as llama.cpp's gguf-py does") {
  for (const ZooDequantCase& c : kCases) {
    CAPTURE(c.file);
    const std::string model = shared_path(std::string("models/zoo/") + c.file + ".gguf");
    const std::string ref = shared_path(std::string("reference/zoo/") + c.file + ".attn_q.dequant.f32");
    REQUIRE(std::filesystem::exists(model));
    REQUIRE(std::filesystem::exists(ref));
    auto f = GgufFile::open(model);
    REQUIRE_MESSAGE(f.has_value(), f.status().message());
    const GgufTensorInfo* t = f->find_tensor("blk.0.attn_q.weight");
    REQUIRE(t != nullptr);
    CHECK(t->dtype == c.type);
    const std::vector<uint8_t> want_bytes = read_bytes(ref);
    const int64_t n = t->shape.numel();
    REQUIRE((int64_t)want_bytes.size() == n * 4);
    std::vector<float> got((size_t)n), want((size_t)n);
    std::memcpy(want.data(), want_bytes.data(), want_bytes.size());
    const int64_t row = t->shape.last();
    const uint64_t row_bytes = bytes_for(t->dtype, row);
    for (int64_t r = 0; r < n / row; ++r)
      dequantize_row(t->dtype, t->data.data() + r * row_bytes, got.data() + r * row, row);
    int64_t differ = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (std::memcmp(&got[(size_t)i], &want[(size_t)i], 4) != 0) {
        if (first < 0) first = i;
        ++differ;
      }
    }
    CHECK_MESSAGE(differ == 0, c.file << ": " << differ << " of " << n << " values differ; first at " << first << ": "
                                      << (first >= 0 ? got[(size_t)first] : 0.0f) << " vs "
                                      << (first >= 0 ? want[(size_t)first] : 0.0f));
  }
}

}  // namespace
}  // namespace tessera::testing
