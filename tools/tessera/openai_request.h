#pragma once
// An OpenAI request body (/v1/completions, /v1/chat/completions) checked and
// turned into what the engine runs. No HTTP here: a batch runner reading
// JSON lines calls the same functions.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>
#include <tessera/serving.h>
#include <tessera/status.h>

namespace tessera::cli {

enum class Endpoint { completions, chat_completions };

// What the server allows beyond what the engine checks.
struct RequestLimits {
  int32_t max_n = 16;              // choices per prompt
  int32_t max_tokens = 0;          // 0: the context length
  int32_t max_logprobs = 20;       // alternatives per token
  int32_t max_prompts = 64;        // prompts in one /v1/completions body
  int32_t max_stop_strings = 16;
};

// A prompt as the body gave it: text to encode, or token ids.
using PromptInput = std::variant<std::string, std::vector<int32_t>>;

struct ParsedRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;                 // the body's "model"; empty when absent
  std::vector<PromptInput> prompts;  // completions: one or more; chat: none (see messages)
  nlohmann::ordered_json messages;   // chat: the checked messages, as given
  Request base;                      // sampling, stops, n, logprobs: every prompt's engine request starts as this
  bool max_tokens_given = false;     // chat's default is "until the context ends"
  bool stream = false;
  bool include_usage = false;        // stream_options.include_usage
  bool echo = false;                 // completions: the prompt's text before the completion
  bool chat_logprobs = false;        // chat: logprobs true (top_logprobs in base.logprobs)
  bool return_token_ids = false;     // extension (as vLLM's): each choice's "token_ids"
};

// Checks every known field's type and range; unknown fields are ignored.
// A refusal's message starts with the field in quotes, "'temperature':
// expected a number, got string", so a server can name it as OpenAI's param.
Expected<ParsedRequest> parse_openai_request(Endpoint endpoint, const std::string& body, const RequestLimits& limits);

// The field a parse_openai_request message names ("temperature"), or "".
std::string error_param(const std::string& message);

}  // namespace tessera::cli
