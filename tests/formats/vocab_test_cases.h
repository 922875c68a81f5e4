#pragma once
// llama.cpp's tokenizer test format (tests/test-tokenizer-0 in llama.cpp):
// the .inp file holds every input followed by "\n__ggml_vocab_test__\n", the
// .out file one line of space-separated ids per input.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::testing {

struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<VocabCase> read_vocab_cases(const std::string& inp, const std::string& out) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string all = slurp(inp);
  std::vector<VocabCase> cases;
  for (size_t at = 0; at < all.size();) {
    const size_t end = all.find(sep, at);
    REQUIRE_MESSAGE(end != std::string::npos, inp << ": input at byte " << at << " has no separator after it");
    cases.push_back({all.substr(at, end - at), {}});
    at = end + sep.size();
  }
  std::istringstream lines(slurp(out));
  size_t i = 0;
  for (std::string line; std::getline(lines, line); ++i) {
    REQUIRE_MESSAGE(i < cases.size(), out << " has more lines than " << inp << " has inputs");
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) cases[i].ids.push_back(id);
  }
  REQUIRE_MESSAGE(i == cases.size(), out << " has " << i << " lines for " << cases.size() << " inputs");
  return cases;
}

inline std::string join(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

}  // namespace tessera::testing
