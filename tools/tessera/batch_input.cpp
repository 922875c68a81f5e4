#include "tools/tessera/batch_input.h"

#include <fstream>
#include <unordered_map>

namespace tessera::cli {

namespace {

// Fills l from one parsed line, or sets l.error naming the field.
void parse_line(const nlohmann::ordered_json& j, BatchLine& l) {
  if (!j.is_object()) {
    l.error = "expected one JSON object per line";
    return;
  }
  if (j.contains("custom_id")) {
    if (j["custom_id"].is_string() && !j["custom_id"].get<std::string>().empty()) l.custom_id = j["custom_id"].get<std::string>();
    else {
      l.error = "'custom_id': expected a non-empty string";
      return;
    }
  } else {
    l.error = "'custom_id': missing";
    return;
  }
  if (!j.contains("method") || !j["method"].is_string() || j["method"].get<std::string>() != "POST") {
    l.error = "'method': expected \"POST\"";
    return;
  }
  if (!j.contains("url") || !j["url"].is_string()) {
    l.error = "'url': expected \"/v1/completions\" or \"/v1/chat/completions\"";
    return;
  }
  l.url = j["url"].get<std::string>();
  if (l.url != "/v1/completions" && l.url != "/v1/chat/completions") {
    l.error = "'url': expected \"/v1/completions\" or \"/v1/chat/completions\", got \"" + l.url + "\"";
    return;
  }
  if (!j.contains("body") || !j["body"].is_object()) {
    l.error = "'body': expected a JSON object";
    return;
  }
  l.body = j["body"];
}

}  // namespace

Expected<std::vector<BatchLine>> read_batch_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path + ": cannot open");
  std::vector<BatchLine> out;
  std::unordered_map<std::string, int64_t> seen;
  std::string text;
  for (int64_t n = 1; std::getline(in, text); ++n) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    BatchLine l;
    l.line = n;
    const auto j = nlohmann::ordered_json::parse(text, nullptr, false);
    if (j.is_discarded()) l.error = "not valid JSON";
    else parse_line(j, l);
    if (l.custom_id.empty() && j.is_object() && j.contains("custom_id") && j["custom_id"].is_string())
      l.custom_id = j["custom_id"].get<std::string>();  // a bad line still answers under its custom_id
    if (!l.custom_id.empty()) {
      auto [it, fresh] = seen.emplace(l.custom_id, n);
      if (!fresh)
        return invalid_argument(path + ":" + std::to_string(n) + ": custom_id \"" + l.custom_id + "\" is also on line " +
                                std::to_string(it->second) + " (each request needs its own)");
    }
    out.push_back(std::move(l));
  }
  if (in.bad()) return io_error(path + ": cannot read");
  return out;
}

}  // namespace tessera::cli
