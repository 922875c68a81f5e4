#include "tools/tessera/serve_generate.h"

#include <condition_variable>
#include <ctime>
#include <deque>
#include <random>

#include "tools/tessera/openai_response.h"
#include "tools/tessera/serve_chat.h"

namespace tessera::cli {

namespace {

using json = nlohmann::ordered_json;

uint64_t random_u64() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock(mu);
  return rng();
}

std::string random_id(const char* prefix) {
  char b[40];
  std::snprintf(b, sizeof b, "%s%016llx", prefix, (unsigned long long)random_u64());
  return b;
}

HttpError bad_request(const Status& s) {
  HttpError e;
  e.status = 400;
  e.message = s.message();
  e.param = error_param(s.message());
  return e;
}

// The engine's refusal of a request it was given.
HttpError submit_error(const Status& s) {
  HttpError e;
  const bool user = s.code() == StatusCode::invalid_argument || s.code() == StatusCode::out_of_range ||
                    s.code() == StatusCode::resource_exhausted;
  e.status = user ? 400 : 500;
  e.type = user ? "invalid_request_error" : "internal_error";
  e.message = s.message();
  return e;
}

}  // namespace

std::variant<std::optional<KvTransferField>, HttpError> kv_transfer_field(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kv_transfer")) return std::optional<KvTransferField>{};
  const json& k = j["kv_transfer"];
  const HttpError bad{400, "'kv_transfer': expected {\"id\": HEX, \"decode\": \"HOST:PORT\"} (set by --role router)", "invalid_request_error",
                      "kv_transfer"};
  if (!k.is_object() || !k.contains("id") || !k["id"].is_string()) return bad;
  KvTransferField f;
  const std::string id = k["id"].get<std::string>();
  char* end = nullptr;
  f.id = std::strtoull(id.c_str(), &end, 16);
  if (id.empty() || id.size() > 15 || *end != '\0' || f.id == 0) return bad;
  if (k.contains("decode")) {
    if (!k["decode"].is_string()) return bad;
    f.decode = k["decode"].get<std::string>();
  }
  return std::optional<KvTransferField>(std::move(f));
}

struct Generation::State {
  ServerContext* ctx = nullptr;
  Engine* engine = nullptr;
  ParsedRequest parsed;
  ResponseHeader header;
  ResponseOptions response_options;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> echo_text;  // per prompt, when echo
  std::vector<std::shared_ptr<RequestHandle>> handles;
  int32_t n = 1;
  uint64_t epoch = 0;
  bool recorded = false;

  // Streaming: the engine thread's events, taken by next_events.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<int32_t, TokenOutput>> events;  // (prompt, event)
  int32_t sequences_ended = 0;
  bool started = false, done = false;
  std::vector<int32_t> prev;          // per choice: the last token, for its text
  std::vector<size_t> text_offset;    // per choice

  int32_t choices() const { return (int32_t)prompts.size() * n; }

  std::string token_text(int32_t prev_id, int32_t id) const {
    if (!engine->has_tokenizer()) return "token_id:" + std::to_string(id);
    auto t = engine->decode({prev_id, id});
    return t ? *t : std::string();
  }

  LogprobEntry entry(int32_t prev_id, const TokenLogprob& lp, const std::vector<TokenLogprob>& top) const {
    LogprobEntry e;
    e.token = token_text(prev_id, lp.token);
    e.logprob = lp.logprob;
    for (const auto& t : top) e.top.emplace_back(token_text(prev_id, t.token), t.logprob);
    return e;
  }

  // Waits for every request, records its metrics once and frees its admission slot.
  void finish_requests() {
    if (recorded) return;
    recorded = true;
    for (auto& h : handles) {
      ctx->metrics.record(h->wait());
      ctx->engine_requests.fetch_sub(1);
    }
  }

  void cancel_all() {
    for (auto& h : handles)
      if (!h->done()) engine->cancel(*h);
  }

  int64_t prompt_tokens() const {
    int64_t t = 0;
    for (const auto& p : prompts) t += (int64_t)p.size();
    return t;
  }
};

Generation::Generation(std::shared_ptr<State> state) : state_(std::move(state)) {}

Generation::~Generation() {
  State& s = *state_;
  s.cancel_all();
  s.finish_requests();
  s.ctx->generations.fetch_sub(1);
}

bool Generation::streaming() const { return state_->parsed.stream; }

void Generation::cancel() { state_->cancel_all(); }

std::variant<std::unique_ptr<Generation>, HttpError> Generation::start(ServerContext& ctx, Endpoint endpoint, const std::string& body) {
  const ServeOptions& opt = ctx.options;
  Engine* engine = ctx.engine.load();
  auto parsed = parse_openai_request(endpoint, body, opt.limits);
  if (!parsed) return bad_request(parsed.status());
  if (!parsed->model.empty() && parsed->model != opt.served_model_name)
    return HttpError{404, "the model '" + parsed->model + "' does not exist; this server serves '" + opt.served_model_name + "'",
                     "invalid_request_error", "model"};

  auto state = std::make_shared<State>();
  State& s = *state;
  s.ctx = &ctx;
  s.engine = engine;
  s.parsed = std::move(*parsed);
  ParsedRequest& p = s.parsed;
  const bool chat = endpoint == Endpoint::chat_completions;
  const int32_t vocab = engine->config().vocab_size;
  const int32_t context = engine->max_context();

  if (chat) {
    const std::string chat_template = opt.chat_template.empty() ? engine->chat_template() : opt.chat_template;
    if (chat_template.empty())
      return HttpError{400, "the model '" + opt.served_model_name +
                                "' has no chat template, which /v1/chat/completions needs (give one with --chat-template FILE, or use /v1/completions)",
                       "invalid_request_error", "messages"};
    json vars;
    vars["messages"] = p.messages;
    vars["add_generation_prompt"] = true;
    vars["bos_token"] = engine->token_text(engine->bos_id());
    vars["eos_token"] = engine->token_text(engine->eos_id());
    auto text = render_chat_prompt(chat_template, vars);
    if (!text)
      return HttpError{400, "the chat template refused the messages: " + text.status().message(), "invalid_request_error", "messages"};
    p.prompts.push_back(std::move(*text));
  }
  for (size_t i = 0; i < p.prompts.size(); ++i) {
    const std::string name = chat ? "messages" : p.prompts.size() == 1 ? "prompt" : "prompt[" + std::to_string(i) + "]";
    std::vector<int32_t> ids;
    std::string echo;
    if (const auto* text = std::get_if<std::string>(&p.prompts[i])) {
      if (!engine->has_tokenizer())
        return HttpError{400, "'" + name + "': the model '" + opt.served_model_name + "' has no tokenizer; send token ids", "invalid_request_error", name};
      auto enc = chat ? engine->encode_chat(*text) : engine->encode(*text);
      if (!enc) return HttpError{400, "'" + name + "': " + enc.status().message(), "invalid_request_error", name};
      ids = std::move(*enc);
      echo = *text;
    } else {
      ids = std::get<std::vector<int32_t>>(p.prompts[i]);
      for (size_t k = 0; k < ids.size(); ++k)
        if (ids[k] >= vocab)
          return HttpError{400, "'" + name + "': token id " + std::to_string(ids[k]) + " (element " + std::to_string(k) +
                                    ") is outside the vocabulary [0, " + std::to_string(vocab) + ")",
                           "invalid_request_error", name};
      if (p.echo && engine->has_tokenizer()) {
        auto d = engine->decode(ids);
        if (d) echo = *d;
      }
    }
    if (ids.empty()) return HttpError{400, "'" + name + "': must hold at least one token", "invalid_request_error", name};
    if ((int64_t)ids.size() >= context)
      return HttpError{400, "'" + name + "': " + std::to_string(ids.size()) + " tokens leave no room to generate in the context of " +
                                std::to_string(context) + " tokens",
                       "invalid_request_error", name};
    s.prompts.push_back(std::move(ids));
    s.echo_text.push_back(std::move(echo));
  }

  Request base = p.base;
  base.detokenize = engine->has_tokenizer();
  if (!base.detokenize && !base.stop.empty())
    return HttpError{400, "'stop': the model '" + opt.served_model_name + "' has no tokenizer to match stop strings on", "invalid_request_error", "stop"};
  if (base.sampling.seed == 0) base.sampling.seed = random_u64() | 1;
  if (Status st = validate(base.sampling, vocab); !st.is_ok()) return bad_request(st);
  s.n = base.n;

  // Disaggregation: a router's request to a prefill or a decode worker.
  std::optional<KvTransferField> kv;
  if (!opt.role.empty()) {
    auto field = kv_transfer_field(body);
    if (auto* e = std::get_if<HttpError>(&field)) return *e;
    kv = std::get<std::optional<KvTransferField>>(field);
  }
  if (kv) {
    if (s.prompts.size() != 1)
      return HttpError{400, "'prompt': a disaggregated request holds one prompt", "invalid_request_error", "prompt"};
    if (opt.role == "prefill" && kv->decode.empty())
      return HttpError{400, "'kv_transfer.decode': a prefill worker needs the decode worker's HOST:PORT", "invalid_request_error", "kv_transfer"};
    if (opt.role == "prefill" ? !ctx.kv_sender.load() : !ctx.kv_receiver.load())
      return HttpError{503, "the KV transfer is not ready", "service_unavailable", ""};
  }

  // Admission: the engine's batch plus --max-waiting-requests.
  const int32_t admit = opt.engine.max_num_seqs + opt.max_waiting_requests;
  const int32_t want = (int32_t)s.prompts.size();
  if (ctx.engine_requests.fetch_add(want) + want > admit) {
    ctx.engine_requests.fetch_sub(want);
    return HttpError{429, "the server is busy: " + std::to_string(admit) + " requests are already running or waiting; retry later",
                     "rate_limit_error", ""};
  }
  ctx.generations.fetch_add(1);
  s.epoch = ctx.cancel_epoch.load();
  s.header.id = random_id(chat ? "chatcmpl-" : "cmpl-");
  s.header.created = (int64_t)std::time(nullptr);
  s.header.model = opt.served_model_name;
  s.header.chat = chat;
  s.response_options.logprobs = base.logprobs >= 0;
  s.response_options.return_token_ids = p.return_token_ids;
  s.prev.assign((size_t)s.choices(), 0);
  s.text_offset.assign((size_t)s.choices(), 0);
  // From here the Generation owns the admission slots and the generation count.
  std::unique_ptr<Generation> g(new Generation(state));
  std::weak_ptr<State> weak = state;
  for (size_t i = 0; i < s.prompts.size(); ++i) {
    Request q = base;
    q.prompt = s.prompts[i];
    // For choices' first token texts.
    for (int32_t k = 0; k < s.n; ++k) s.prev[i * s.n + k] = q.prompt.back();
    if (!p.max_tokens_given && chat) q.max_tokens = std::max<int32_t>(1, context - (int32_t)q.prompt.size());
    if (opt.limits.max_tokens > 0) q.max_tokens = std::min(q.max_tokens, opt.limits.max_tokens);
    // Every request reports through the callback: a stream takes each event,
    // a whole response only the ends, so that both can wait for them and
    // notice a shutdown meanwhile.
    const bool stream = p.stream;
    auto on_token = [weak, i, stream](const TokenOutput& t) {
      if (!stream && t.finish == FinishReason::none) return;
      if (auto st = weak.lock()) {
        {
          std::lock_guard lock(st->mu);
          st->events.emplace_back((int32_t)i, t);
        }
        st->cv.notify_one();
      }
    };
    Expected<std::shared_ptr<RequestHandle>> h = invalid_argument("unreachable");
    if (kv && opt.role == "decode") {
      // Waits for the prefill worker's K/V, then decodes here.
      h = ctx.kv_receiver.load()->submit(q, kv->id, on_token);
    } else if (kv && opt.role == "prefill") {
      // Runs the prompt and ships its K/V; the reply is the one token it sampled.
      auto pr = ctx.kv_sender.load()->prefill(q, kv->decode, kv->id);
      if (pr) {
        const RequestResult& done = pr->handle->wait();
        for (size_t k = 0; k < done.sequences.size(); ++k) {  // each of the n sequences' end
          TokenOutput end;
          end.index = (int32_t)k;
          end.finish = done.sequences[k].finish;
          end.error = done.sequences[k].error;
          on_token(end);
        }
        h = pr->handle;
      } else {
        h = pr.status();
      }
    } else {
      h = engine->submit(q, on_token);
    }
    if (!h) {
      // The requests not submitted give their slots back; the Generation's
      // destructor cancels and accounts for those that were.
      ctx.engine_requests.fetch_sub(want - (int32_t)i);
      s.prompts.resize(s.handles.size());
      return submit_error(h.status().with_context(want > 1 ? "prompt[" + std::to_string(i) + "]" : chat ? "messages" : "prompt"));
    }
    s.handles.push_back(std::move(*h));
  }
  return g;
}

std::variant<std::string, HttpError> Generation::complete(const std::function<bool()>& client_gone) {
  State& s = *state_;
  {
    std::unique_lock lock(s.mu);
    while (s.sequences_ended < s.choices()) {
      s.cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return !s.events.empty(); });
      for (const auto& e : s.events)
        if (e.second.finish != FinishReason::none) ++s.sequences_ended;
      s.events.clear();
      if (s.sequences_ended == s.choices()) break;
      const bool shutdown = s.ctx->cancel_epoch.load() != s.epoch;
      lock.unlock();
      if (shutdown) {
        s.cancel_all();
      } else if (client_gone()) {
        s.cancel_all();
        return HttpError{499, "the client closed the connection", "cancelled", ""};
      }
      lock.lock();
    }
  }
  std::vector<ChoiceOutput> choices;
  int64_t completion_tokens = 0;
  for (size_t i = 0; i < s.handles.size(); ++i) {
    const RequestResult& r = s.handles[i]->wait();
    completion_tokens += r.metrics.generated_tokens;
    for (size_t k = 0; k < r.sequences.size(); ++k) {
      const SequenceResult& seq = r.sequences[k];
      if (seq.finish == FinishReason::error) return HttpError{500, "the engine failed: " + seq.error, "internal_error", ""};
      ChoiceOutput c;
      c.index = (int32_t)(i * s.n + k);
      c.text = (s.parsed.echo ? s.echo_text[i] : std::string()) + seq.text;
      c.token_ids = seq.tokens;
      c.finish = seq.finish;
      if (s.response_options.logprobs) {
        int32_t prev = s.prompts[i].back();
        for (size_t t = 0; t < seq.logprobs.size(); ++t) {
          static const std::vector<TokenLogprob> none;
          c.logprobs.push_back(s.entry(prev, seq.logprobs[t], t < seq.top_logprobs.size() ? seq.top_logprobs[t] : none));
          prev = seq.logprobs[t].token;
        }
      }
      choices.push_back(std::move(c));
    }
  }
  s.finish_requests();
  ResponseOptions o = s.response_options;
  if (s.parsed.echo && !s.echo_text.empty()) o.text_offset = s.echo_text[0].size();
  return dump(response_json(s.header, choices, o, s.prompt_tokens(), completion_tokens));
}

bool Generation::next_events(std::string* out, std::chrono::milliseconds wait) {
  State& s = *state_;
  if (s.done) return false;
  const ResponseOptions& o = s.response_options;
  if (!s.started) {
    s.started = true;
    for (int32_t c = 0; c < s.choices(); ++c) {
      const std::string& echo = s.parsed.echo ? s.echo_text[(size_t)c / s.n] : std::string();
      if (s.header.chat || !echo.empty()) {
        ChunkPart part;
        part.index = c;
        part.first = true;
        part.text = echo;
        *out += sse_event(chunk_json(s.header, part, o));
        s.text_offset[c] = echo.size();
      }
    }
    return true;
  }
  if (s.ctx->cancel_epoch.load() != s.epoch) s.cancel_all();
  std::deque<std::pair<int32_t, TokenOutput>> events;
  {
    std::unique_lock lock(s.mu);
    s.cv.wait_for(lock, wait, [&] { return !s.events.empty(); });
    events.swap(s.events);
  }
  for (auto& [prompt, t] : events) {
    const int32_t c = prompt * s.n + t.index;
    ChunkPart part;
    part.index = c;
    part.text = t.text;
    part.text_offset = s.text_offset[c];
    if (t.token >= 0) {
      part.token_ids = {t.token};
      if (o.logprobs) part.logprobs.push_back(s.entry(s.prev[c], t.logprob, t.top_logprobs));
      s.prev[c] = t.token;
    }
    part.finish = t.finish;
    s.text_offset[c] += t.text.size();
    if (!part.text.empty() || !part.token_ids.empty() || part.finish != FinishReason::none) *out += sse_event(chunk_json(s.header, part, o));
    if (t.finish == FinishReason::error)
      *out += sse_event(error_json("the engine failed: " + t.error, "internal_error", ""));
    if (t.finish != FinishReason::none) ++s.sequences_ended;
  }
  if (s.sequences_ended < s.choices()) return true;
  s.finish_requests();
  if (s.parsed.include_usage) {
    int64_t completion_tokens = 0;
    for (auto& h : s.handles) completion_tokens += h->wait().metrics.generated_tokens;
    *out += sse_event(usage_chunk_json(s.header, s.prompt_tokens(), completion_tokens));
  }
  *out += kSseDone;
  s.done = true;
  return false;
}

}  // namespace tessera::cli
