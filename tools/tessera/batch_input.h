#pragma once
// tessera batch's input: the OpenAI Batch format, one request a line:
// {"custom_id": "...", "method": "POST", "url": "/v1/completions" or
// "/v1/chat/completions", "body": {...}}. A bad line becomes that line's
// error (its custom_id's, or its line number's when it has none), not a stop.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <tessera/status.h>

namespace tessera::cli {

struct BatchLine {
  int64_t line = 0;          // 1-based
  std::string custom_id;     // empty when the line has none
  std::string url;           // /v1/completions or /v1/chat/completions
  nlohmann::ordered_json body;
  std::string error;         // set: the line is refused with this message
};

// The file's requests in file order (blank lines skipped). A file that
// cannot be read, or two lines with the same custom_id (the output could
// not tell them apart), is an error naming the file and lines.
Expected<std::vector<BatchLine>> read_batch_input(const std::string& path);

}  // namespace tessera::cli
