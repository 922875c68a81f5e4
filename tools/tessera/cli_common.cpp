#include "tools/tessera/cli_common.h"

#include <charconv>
#include <cstdio>

namespace tessera::cli {

int fail(const Status& s) {
  std::string m = s.message();
  for (char& c : m)
    if (c == '\n') c = ' ';
  std::fprintf(stderr, "tessera: %s\n", m.c_str());
  return s.code() == StatusCode::invalid_argument ? 2 : 1;
}

Expected<std::vector<int32_t>> parse_id_list(const std::string& flag, const std::string& text) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    int32_t v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      return invalid_argument(flag + ": '" + item + "' (element " + std::to_string(ids.size()) +
                              ") is not a token id; expected comma-separated integers like 1,2,3");
    ids.push_back(v);
    start = end + 1;
  }
  return ids;
}

}  // namespace tessera::cli
