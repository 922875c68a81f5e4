#pragma once
// The chat prompt: a model's chat template rendered over the request's
// messages. The one place the server renders templates.
#include <string>

#include <nlohmann/json.hpp>
#include <tessera/status.h>

namespace tessera::cli {

// `variables` holds "messages" (checked by parse_openai_request),
// "add_generation_prompt", "bos_token" and "eos_token".
Expected<std::string> render_chat_prompt(const std::string& template_source, const nlohmann::ordered_json& variables);

}  // namespace tessera::cli
