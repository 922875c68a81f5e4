#pragma once
// Every quantized llama of the zoo against llama.cpp's own logits
// (../shared/reference/zoo, README there): the whole id sequence of each
// reference line fed as the prompt (teacher forcing), every row's NMSE
// within the README's bound for the file's types and the argmax agreeing
// on the share of rows it states. Used by e2e (CPU) and vulkan suites.
#include <doctest/doctest.h>

#include <algorithm>

#include <cstring>
#include <sstream>

#include "support/cli.h"
#include "support/requirements.h"
#include "tessera/tessera.h"

namespace tessera::testing {


inline constexpr int kZooVocab = 512;

struct ZooQuantFile {
  const char* file;      // models/zoo/FILE.gguf
  double max_nmse;       // per row
  double min_argmax;     // share of rows
};

// The README's table, by the file's weight types.
inline constexpr ZooQuantFile kZooQuantFiles[] = {
    {"q-llama-f16", 1e-5, 1.0},           {"q-llama-BF16-pure", 2e-4, 0.95},   {"q-llama-Q8_0-pure", 2e-3, 0.90},
    {"q-llama-Q4_0-pure", 2e-3, 0.90},    {"q-llama-Q4_1-pure", 2e-3, 0.90},   {"q-llama-Q5_0-pure", 2e-3, 0.90},
    {"q-llama-Q5_1-pure", 2e-3, 0.90},    {"q-llama-Q6_K-pure", 5e-3, 0.90},   {"q-llama-Q5_K_M-pure", 5e-3, 0.90},
    {"q-llama-Q4_K_M-pure", 5e-3, 0.90},  {"q-llama-IQ4_NL-pure", 5e-3, 0.90}, {"q-llama-IQ4_XS-pure", 5e-3, 0.90},
    {"q-llama-Q4_K_M", 5e-3, 0.90},       {"q-llama-Q5_K_M", 5e-3, 0.90},      {"q-llama-Q3_K_M-pure", 1e-2, 0.85},
    {"q-llama-Q2_K-pure", 1e-2, 0.85},
};

inline std::vector<std::vector<int32_t>> reference_sequences(const std::string& gguf) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream in(read_file(shared_path("reference/zoo/greedy.tsv")));
  for (std::string line; std::getline(in, line);) {
    std::istringstream cols(line);
    std::string f, prompt, ids;
    std::getline(cols, f, '\t');
    std::getline(cols, prompt, '\t');
    std::getline(cols, ids, '\t');
    if (f != gguf) continue;
    std::vector<int32_t> seq;
    std::istringstream s(ids);
    for (std::string tok; std::getline(s, tok, ',');) seq.push_back(std::stoi(tok));
    out.push_back(seq);
  }
  return out;
}

inline std::vector<float> read_f32(const std::string& path) {
  const std::string bytes = read_file(path);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

inline void check_zoo_file(const ZooQuantFile& z, const std::string& backend, const std::string& passes) {
  const std::string file = z.file;
  CAPTURE(file);
  CAPTURE(backend);
  CAPTURE(passes);
  tessera::ModelOptions o;
  o.path = shared_path("models/zoo/" + file + ".gguf");
  o.backend = backend;
  o.passes = passes;
  o.strict = true;  // every node where asked: no silent CPU fallback
  auto model = tessera::Model::open(o);
  REQUIRE_MESSAGE(model.has_value(), model.status().message());
  const auto seqs = reference_sequences(file + ".gguf");
  REQUIRE(seqs.size() == 3);
  double worst = 0;
  int rows = 0, agree = 0;
  for (size_t line = 0; line < seqs.size(); ++line) {
    const std::vector<float> ref = read_f32(shared_path("reference/zoo/" + file + ".p" + std::to_string(line) + ".logits.f32"));
    const std::vector<int32_t> fed(seqs[line].begin(), seqs[line].end() - 1);
    REQUIRE(ref.size() == fed.size() * kZooVocab);
    auto gen = (*model)->start({0.0f, 1.0f, 0, 1});
    REQUIRE(gen.has_value());
    REQUIRE((*gen)->feed_all(fed).is_ok());
    const auto got = (*gen)->all_logits();
    REQUIRE(got.size() == ref.size());
    for (size_t r = 0; r < fed.size(); ++r) {
      const float* a = got.data() + r * kZooVocab;
      const float* b = ref.data() + r * kZooVocab;
      double num = 0, den = 0;
      int am = 0, bm = 0;
      for (int i = 0; i < kZooVocab; ++i) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
        if (a[i] > a[am]) am = i;
        if (b[i] > b[bm]) bm = i;
      }
      worst = std::max(worst, num / den);
      agree += am == bm;
      ++rows;
    }
  }
  MESSAGE(file << " on " << backend << " (passes " << passes << "): worst row NMSE " << worst << ", argmax agrees on "
               << agree << "/" << rows);
  CHECK(worst <= z.max_nmse);
  CHECK((double)agree >= z.min_argmax * rows);
}

}  // namespace tessera::testing
