#pragma once
// Readers for the reference files in ../shared/reference (see its README).
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::testing {

struct GreedyCase {
  std::string prompt_text;         // text prompts (tsv files)
  std::string prompt_ids;          // id prompts (stories file), as written
  std::vector<int32_t> full_ids;
  std::string text;                // what run.c printed (tsv files)
};

inline std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t\r");
    if (b != std::string::npos) ids.push_back(std::stoi(item.substr(b, e - b + 1)));
  }
  return ids;
}

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "PROMPT_IDS | FULL_IDS" lines; '#' starts a comment line.
inline std::vector<GreedyCase> read_id_cases(const std::string& path) {
  std::vector<GreedyCase> cases;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto bar = line.find('|');
    if (bar == std::string::npos) continue;
    GreedyCase c;
    c.prompt_ids = trim(line.substr(0, bar));
    c.full_ids = parse_ids(line.substr(bar + 1));
    cases.push_back(std::move(c));
  }
  return cases;
}

// "prompt \t FULL_IDS \t json-text" lines; '#' starts a comment line.
inline std::vector<GreedyCase> read_text_cases(const std::string& path) {
  std::vector<GreedyCase> cases;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto t1 = line.find('\t');
    const auto t2 = line.find('\t', t1 + 1);
    if (t1 == std::string::npos || t2 == std::string::npos) continue;
    GreedyCase c;
    c.prompt_text = line.substr(0, t1);
    c.full_ids = parse_ids(line.substr(t1 + 1, t2 - t1 - 1));
    c.text = nlohmann::json::parse(line.substr(t2 + 1)).get<std::string>();
    cases.push_back(std::move(c));
  }
  return cases;
}

inline std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';  // (`(i ? "," : "") + ...` draws a false -Wrestrict from GCC 12 where this is inlined)
    s += std::to_string(ids[i]);
  }
  return s;
}

}  // namespace tessera::testing
