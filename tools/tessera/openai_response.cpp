#include "tools/tessera/openai_response.h"

namespace tessera::cli {

namespace {

using json = nlohmann::ordered_json;

json token_bytes(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back((int)c);
  return b;
}

// Completions' form: parallel arrays, top_logprobs as {token: logprob} objects.
json completion_logprobs(const std::vector<LogprobEntry>& entries, size_t text_offset) {
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const auto& e : entries) {
    tokens.push_back(e.token);
    lps.push_back(e.logprob);
    json top = json::object();
    for (const auto& [t, lp] : e.top) top[t] = lp;
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += e.token.size();
  }
  json o;
  o["tokens"] = std::move(tokens);
  o["token_logprobs"] = std::move(lps);
  o["top_logprobs"] = std::move(tops);
  o["text_offset"] = std::move(offsets);
  return o;
}

// Chat's form: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}.
json chat_logprobs(const std::vector<LogprobEntry>& entries) {
  json content = json::array();
  for (const auto& e : entries) {
    json top = json::array();
    for (const auto& [t, lp] : e.top) top.push_back({{"token", t}, {"logprob", lp}, {"bytes", token_bytes(t)}});
    content.push_back({{"token", e.token}, {"logprob", e.logprob}, {"bytes", token_bytes(e.token)}, {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

json finish_json(FinishReason r) { return r == FinishReason::none ? json(nullptr) : json(finish_reason_name(r)); }

json header_json(const ResponseHeader& h, bool chunk) {
  json j;
  j["id"] = h.id;
  j["object"] = h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  j["created"] = h.created;
  j["model"] = h.model;
  return j;
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::cancelled: return "abort";
    case FinishReason::error: return "error";
    case FinishReason::none: break;
  }
  return "none";
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}, {"total_tokens", prompt_tokens + completion_tokens}};
}

json response_json(const ResponseHeader& h, const std::vector<ChoiceOutput>& choices, const ResponseOptions& o, int64_t prompt_tokens,
                   int64_t completion_tokens) {
  json j = header_json(h, false);
  json arr = json::array();
  for (const auto& c : choices) {
    json cj;
    cj["index"] = c.index;
    if (h.chat) {
      cj["message"] = {{"role", "assistant"}, {"content", c.text}};
      cj["logprobs"] = o.logprobs ? chat_logprobs(c.logprobs) : json(nullptr);
    } else {
      cj["text"] = c.text;
      cj["logprobs"] = o.logprobs ? completion_logprobs(c.logprobs, o.text_offset) : json(nullptr);
    }
    cj["finish_reason"] = finish_json(c.finish);
    if (o.return_token_ids) cj["token_ids"] = c.token_ids;
    arr.push_back(std::move(cj));
  }
  j["choices"] = std::move(arr);
  j["usage"] = usage_json(prompt_tokens, completion_tokens);
  return j;
}

json chunk_json(const ResponseHeader& h, const ChunkPart& p, const ResponseOptions& o) {
  json j = header_json(h, true);
  json cj;
  cj["index"] = p.index;
  if (h.chat) {
    json delta = json::object();
    if (p.first) delta["role"] = "assistant";
    if (!p.text.empty() || (p.first && p.finish == FinishReason::none)) delta["content"] = p.text;
    cj["delta"] = std::move(delta);
    cj["logprobs"] = o.logprobs && !p.logprobs.empty() ? chat_logprobs(p.logprobs) : json(nullptr);
  } else {
    cj["text"] = p.text;
    cj["logprobs"] = o.logprobs && !p.logprobs.empty() ? completion_logprobs(p.logprobs, p.text_offset) : json(nullptr);
  }
  cj["finish_reason"] = finish_json(p.finish);
  if (o.return_token_ids) cj["token_ids"] = p.token_ids;
  j["choices"] = json::array({std::move(cj)});
  return j;
}

json usage_chunk_json(const ResponseHeader& h, int64_t prompt_tokens, int64_t completion_tokens) {
  json j = header_json(h, true);
  j["choices"] = json::array();
  j["usage"] = usage_json(prompt_tokens, completion_tokens);
  return j;
}

json error_json(const std::string& message, const std::string& type, const std::string& param) {
  return {{"error", {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)}, {"code", nullptr}}}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump(j) + "\n\n"; }

}  // namespace tessera::cli
