#include "tools/tessera/openai_request.h"

#include <cmath>
#include <limits>

namespace tessera::cli {

namespace {

using json = nlohmann::ordered_json;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    default: return "value";
  }
}

Status refuse(const std::string& field, const std::string& what) { return invalid_argument("'" + field + "': " + what); }

Status expected(const std::string& field, const char* what, const json& got) {
  return refuse(field, std::string("expected ") + what + ", got " + type_name(got));
}

// Present and not null.
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

Status get_number(const json& body, const char* name, double lo, double hi, float* out) {
  const json* v = field(body, name);
  if (!v) return Status::ok();
  if (!v->is_number()) return expected(name, "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    return refuse(name, "must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], got " + v->dump());
  *out = (float)d;
  return Status::ok();
}

Status get_int(const json& body, const char* name, int64_t lo, int64_t hi, int64_t* out, bool* given = nullptr) {
  const json* v = field(body, name);
  if (!v) return Status::ok();
  if (!v->is_number_integer()) return expected(name, "an integer", *v);
  if (v->is_number_unsigned() && v->get<uint64_t>() > (uint64_t)std::numeric_limits<int64_t>::max())
    return refuse(name, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v->dump());
  const int64_t i = v->get<int64_t>();
  if (i < lo || i > hi) return refuse(name, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v->dump());
  *out = i;
  if (given) *given = true;
  return Status::ok();
}

Status get_bool(const json& body, const char* name, bool* out) {
  const json* v = field(body, name);
  if (!v) return Status::ok();
  if (!v->is_boolean()) return expected(name, "a boolean", *v);
  *out = v->get<bool>();
  return Status::ok();
}

Expected<std::vector<int32_t>> token_array(const json& a, const std::string& name) {
  std::vector<int32_t> ids;
  ids.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const json& t = a[i];
    if (!t.is_number_integer()) return expected(name + "[" + std::to_string(i) + "]", "a token id (integer)", t);
    if (t.is_number_unsigned() ? t.get<uint64_t>() > (uint64_t)INT32_MAX : (t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX))
      return refuse(name + "[" + std::to_string(i) + "]", "token id " + t.dump() + " is not a valid id");
    ids.push_back(t.get<int32_t>());
  }
  if (ids.empty()) return refuse(name, "must hold at least one token");
  return ids;
}

// "prompt": a string, an array of strings, an array of ids, or an array of arrays of ids.
Status parse_prompt(const json& body, const RequestLimits& limits, std::vector<PromptInput>* out) {
  const json* p = field(body, "prompt");
  if (!p) return refuse("prompt", "is required");
  if (p->is_string()) {
    out->push_back(p->get<std::string>());
    return Status::ok();
  }
  if (!p->is_array()) return expected("prompt", "a string, an array of strings or an array of token ids", *p);
  if (p->empty()) return refuse("prompt", "must not be empty");
  if ((*p)[0].is_number()) {
    auto ids = token_array(*p, "prompt");
    if (!ids) return ids.status();
    out->push_back(std::move(*ids));
    return Status::ok();
  }
  if ((int64_t)p->size() > limits.max_prompts)
    return refuse("prompt", "holds " + std::to_string(p->size()) + " prompts, at most " + std::to_string(limits.max_prompts) + " are allowed");
  for (size_t i = 0; i < p->size(); ++i) {
    const json& e = (*p)[i];
    const std::string name = "prompt[" + std::to_string(i) + "]";
    if (e.is_string()) {
      out->push_back(e.get<std::string>());
    } else if (e.is_array()) {
      auto ids = token_array(e, name);
      if (!ids) return ids.status();
      out->push_back(std::move(*ids));
    } else {
      return expected(name, "a string or an array of token ids", e);
    }
  }
  return Status::ok();
}

// "messages": [{role, content: string | [{type: "text", text}]}, ...]
Status parse_messages(const json& body, json* out) {
  const json* m = field(body, "messages");
  if (!m) return refuse("messages", "is required");
  if (!m->is_array()) return expected("messages", "an array", *m);
  if (m->empty()) return refuse("messages", "must hold at least one message");
  *out = json::array();
  for (size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    const std::string name = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) return expected(name, "an object", msg);
    const json* role = field(msg, "role");
    if (!role) return refuse(name + ".role", "is required");
    if (!role->is_string()) return expected(name + ".role", "a string", *role);
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "developer")
      return refuse(name + ".role", "must be system, developer, user, assistant or tool, got \"" + r + "\"");
    json checked = msg;
    const json* content = field(msg, "content");
    if (!content) {
      // An assistant message may carry tool calls instead of content.
      if (r != "assistant" || !field(msg, "tool_calls")) return refuse(name + ".content", "is required");
    } else if (content->is_array()) {
      // Text parts are joined into one string: what templates expect.
      std::string text;
      for (size_t k = 0; k < content->size(); ++k) {
        const json& part = (*content)[k];
        const std::string pname = name + ".content[" + std::to_string(k) + "]";
        if (!part.is_object()) return expected(pname, "an object", part);
        const json* type = field(part, "type");
        if (!type || !type->is_string() || type->get<std::string>() != "text")
          return refuse(pname + ".type", "only \"text\" parts are supported");
        const json* t = field(part, "text");
        if (!t) return refuse(pname + ".text", "is required");
        if (!t->is_string()) return expected(pname + ".text", "a string", *t);
        text += t->get<std::string>();
      }
      checked["content"] = text;
    } else if (!content->is_string()) {
      return expected(name + ".content", "a string or an array of text parts", *content);
    }
    out->push_back(std::move(checked));
  }
  return Status::ok();
}

Status parse_stop(const json& body, const RequestLimits& limits, std::vector<std::string>* out) {
  const json* s = field(body, "stop");
  if (!s) return Status::ok();
  if (s->is_string()) {
    if (!s->get<std::string>().empty()) out->push_back(s->get<std::string>());
    return Status::ok();
  }
  if (!s->is_array()) return expected("stop", "a string or an array of strings", *s);
  if ((int64_t)s->size() > limits.max_stop_strings)
    return refuse("stop", "holds " + std::to_string(s->size()) + " strings, at most " + std::to_string(limits.max_stop_strings) + " are allowed");
  for (size_t i = 0; i < s->size(); ++i) {
    if (!(*s)[i].is_string()) return expected("stop[" + std::to_string(i) + "]", "a string", (*s)[i]);
    if (!(*s)[i].get<std::string>().empty()) out->push_back((*s)[i].get<std::string>());
  }
  return Status::ok();
}

Status parse_logit_bias(const json& body, SamplerParams* sp) {
  const json* b = field(body, "logit_bias");
  if (!b) return Status::ok();
  if (!b->is_object()) return expected("logit_bias", "an object of token id to bias", *b);
  for (const auto& [key, value] : b->items()) {
    const std::string name = "logit_bias." + key;
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (...) {
      used = 0;
    }
    if (key.empty() || used != key.size() || id < 0 || id > INT32_MAX) return refuse("logit_bias", "key \"" + key + "\" is not a token id");
    if (!value.is_number()) return expected(name, "a number", value);
    const double v = value.get<double>();
    if (!std::isfinite(v) || v < -100 || v > 100) return refuse(name, "must be in [-100, 100], got " + value.dump());
    sp->logit_bias.emplace_back((int32_t)id, (float)v);
  }
  return Status::ok();
}

Status parse_stop_token_ids(const json& body, Request* q) {
  const json* s = field(body, "stop_token_ids");
  if (!s) return Status::ok();
  if (!s->is_array()) return expected("stop_token_ids", "an array of token ids", *s);
  if (s->empty()) return Status::ok();
  auto ids = token_array(*s, "stop_token_ids");
  if (!ids) return ids.status();
  q->stop_token_ids = std::move(*ids);
  return Status::ok();
}

}  // namespace

std::string error_param(const std::string& message) {
  if (message.size() < 3 || message[0] != '\'') return "";
  const auto end = message.find("': ");
  return end == std::string::npos ? "" : message.substr(1, end - 1);
}

Expected<ParsedRequest> parse_openai_request(Endpoint endpoint, const std::string& body_text, const RequestLimits& limits) {
  json body;
  try {
    body = json::parse(body_text);
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, ...": drop the tag.
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    return invalid_argument("the body is not valid JSON: " + what);
  }
  if (!body.is_object()) return invalid_argument(std::string("the body must be a JSON object, got ") + type_name(body));

  ParsedRequest r;
  r.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::chat_completions;
  Request& q = r.base;
  SamplerParams& sp = q.sampling;
  // OpenAI's defaults: temperature 1, top_p 1 (off).
  sp.temperature = 1.0f;
  sp.top_p = 1.0f;
  q.max_tokens = 16;

  if (const json* m = field(body, "model")) {
    if (!m->is_string()) return expected("model", "a string", *m);
    r.model = m->get<std::string>();
  }
  if (chat) {
    if (Status s = parse_messages(body, &r.messages); !s.is_ok()) return s;
  } else {
    if (Status s = parse_prompt(body, limits, &r.prompts); !s.is_ok()) return s;
  }
  const int64_t max_tokens_cap = limits.max_tokens > 0 ? limits.max_tokens : INT32_MAX;
  int64_t i64 = 0;
  for (const char* name : chat ? std::vector<const char*>{"max_tokens", "max_completion_tokens"} : std::vector<const char*>{"max_tokens"}) {
    const json* v = field(body, name);
    if (!v) continue;
    if (!v->is_number_integer()) return expected(name, "an integer", *v);
    const bool huge = v->is_number_unsigned() && v->get<uint64_t>() > (uint64_t)max_tokens_cap;
    if (huge || v->get<int64_t>() < 1 || v->get<int64_t>() > max_tokens_cap)
      return refuse(name, "must be in [1, " + std::to_string(max_tokens_cap) + "], got " + v->dump());
    q.max_tokens = v->get<int32_t>();
    r.max_tokens_given = true;
  }
  if (Status s = get_number(body, "temperature", 0, 2, &sp.temperature); !s.is_ok()) return s;
  if (Status s = get_number(body, "top_p", 0, 1, &sp.top_p); !s.is_ok()) return s;
  if (field(body, "top_p") && sp.top_p <= 0) return refuse("top_p", "must be in (0, 1], got " + field(body, "top_p")->dump());
  if (Status s = get_number(body, "presence_penalty", -2, 2, &sp.presence_penalty); !s.is_ok()) return s;
  if (Status s = get_number(body, "frequency_penalty", -2, 2, &sp.frequency_penalty); !s.is_ok()) return s;
  // vLLM's extensions.
  if (Status s = get_number(body, "min_p", 0, 1, &sp.min_p); !s.is_ok()) return s;
  if (Status s = get_number(body, "repetition_penalty", 1e-3, 100, &sp.repetition_penalty); !s.is_ok()) return s;
  i64 = 0;
  if (Status s = get_int(body, "top_k", -1, INT32_MAX, &i64); !s.is_ok()) return s;
  sp.top_k = i64 < 0 ? 0 : (int32_t)i64;
  if (const json* v = field(body, "seed")) {
    if (!v->is_number_integer()) return expected("seed", "an integer", *v);
    sp.seed = v->is_number_unsigned() ? v->get<uint64_t>() : (uint64_t)v->get<int64_t>();
  } else {
    sp.seed = 0;  // filled with a random one by the caller
  }
  i64 = 1;
  if (Status s = get_int(body, "n", 1, limits.max_n, &i64); !s.is_ok()) return s;
  q.n = (int32_t)i64;
  if (Status s = parse_stop(body, limits, &q.stop); !s.is_ok()) return s;
  if (Status s = parse_logit_bias(body, &sp); !s.is_ok()) return s;
  if (Status s = parse_stop_token_ids(body, &q); !s.is_ok()) return s;
  if (Status s = get_bool(body, "ignore_eos", &q.ignore_eos); !s.is_ok()) return s;
  if (Status s = get_bool(body, "return_token_ids", &r.return_token_ids); !s.is_ok()) return s;
  if (chat) {
    if (Status s = get_bool(body, "logprobs", &r.chat_logprobs); !s.is_ok()) return s;
    i64 = 0;
    bool top_given = false;
    if (Status s = get_int(body, "top_logprobs", 0, limits.max_logprobs, &i64, &top_given); !s.is_ok()) return s;
    if (top_given && !r.chat_logprobs) return refuse("top_logprobs", "needs \"logprobs\": true");
    q.logprobs = r.chat_logprobs ? (int32_t)i64 : -1;
  } else {
    i64 = -1;
    if (const json* v = field(body, "logprobs"); v && v->is_boolean()) {
      // Some clients send the chat form here; true means the chosen token's only.
      i64 = v->get<bool>() ? 0 : -1;
    } else if (Status s = get_int(body, "logprobs", 0, limits.max_logprobs, &i64); !s.is_ok()) {
      return s;
    }
    q.logprobs = (int32_t)i64;
    if (Status s = get_bool(body, "echo", &r.echo); !s.is_ok()) return s;
  }
  if (Status s = get_bool(body, "stream", &r.stream); !s.is_ok()) return s;
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) return expected("stream_options", "an object", *so);
    if (Status s = get_bool(*so, "include_usage", &r.include_usage); !s.is_ok()) return refuse("stream_options.include_usage", "expected a boolean");
  }
  return r;
}

}  // namespace tessera::cli
