#pragma once
// OpenAI's response objects: text_completion, chat.completion and their
// stream chunks, usage, errors, and the server-sent-event framing.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <tessera/serving.h>

namespace tessera::cli {

// One sampled token's log-probability, with its text, and the alternatives.
struct LogprobEntry {
  std::string token;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

struct ChoiceOutput {
  int32_t index = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<LogprobEntry> logprobs;
  FinishReason finish = FinishReason::none;
};

struct ResponseHeader {
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string model;
  bool chat = false;
};

struct ResponseOptions {
  bool logprobs = false;          // the request asked for them
  bool return_token_ids = false;  // extension: "token_ids" per choice
  size_t text_offset = 0;         // completions' text_offset starts here (the echoed prompt's length)
};

// "stop", "length"; a cancelled request "abort" (as vLLM), an engine error "error".
const char* finish_reason_name(FinishReason reason);

nlohmann::ordered_json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

nlohmann::ordered_json response_json(const ResponseHeader& h, const std::vector<ChoiceOutput>& choices, const ResponseOptions& o,
                                     int64_t prompt_tokens, int64_t completion_tokens);

// One stream chunk for one choice: its new text (chat: the first chunk of a
// choice carries delta.role), the tokens' logprobs, and on its last chunk
// the finish reason.
struct ChunkPart {
  int32_t index = 0;
  bool first = false;  // chat: delta.role "assistant"
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<LogprobEntry> logprobs;
  FinishReason finish = FinishReason::none;
  size_t text_offset = 0;
};
nlohmann::ordered_json chunk_json(const ResponseHeader& h, const ChunkPart& part, const ResponseOptions& o);
// The final chunk of stream_options.include_usage: no choices, the usage.
nlohmann::ordered_json usage_chunk_json(const ResponseHeader& h, int64_t prompt_tokens, int64_t completion_tokens);

// {"error": {"message", "type", "param", "code"}}
nlohmann::ordered_json error_json(const std::string& message, const std::string& type, const std::string& param);

// JSON text with invalid UTF-8 replaced by U+FFFD rather than throwing.
std::string dump(const nlohmann::ordered_json& j);
// "data: JSON\n\n"
std::string sse_event(const nlohmann::ordered_json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace tessera::cli
