#pragma once
// The llama zoo file made a llama3 one: with rope_freqs.weight (llama3's
// per-pair RoPE frequency divisors) added, written to a temporary file. The
// zoo has no llama3 file; these tests check that the factors reach every
// rope, on every backend.
#include <doctest/doctest.h>

#include <span>
#include <string>
#include <vector>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_writer.h"
#include "support/cli.h"

namespace tessera::testing {

inline std::string llama_with_freq_factors(const std::vector<float>& factors, const std::string& tag) {
  auto f = GgufFile::open(shared_path("models/zoo/llama-f32.gguf"));
  REQUIRE(f.has_value());
  GgufWriter w = gguf_writer_from(*f);
  REQUIRE(w.add_tensor("rope_freqs.weight", DType::f32, Shape{(int64_t)factors.size()}, std::as_bytes(std::span<const float>(factors)))
              .is_ok());
  const std::string path = temp_dir() + "/llama-f32-rope-freqs-" + tag + ".gguf";
  REQUIRE(w.write(path).is_ok());
  return path;
}

// 1, 1.5, 2, ...: every pair's angle divided by another factor.
inline std::vector<float> ramp_freq_factors(size_t pairs) {
  std::vector<float> ramp(pairs);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = 1.0f + 0.5f * (float)i;
  return ramp;
}

// sum (a - b)^2 / sum b^2 over the whole of both.
inline double whole_nmse(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), den += (double)b[i] * b[i];
  return num / den;
}

}  // namespace tessera::testing
