// The HTTP side of `tessera serve`: cpp-httplib's server, its routes, the
// API key, SSE streaming, and the load-then-serve-then-drain lifecycle.
// The only translation unit that includes httplib.h.
#include "tools/tessera/serve_http.h"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <ctime>
#include <thread>

#include "tools/tessera/connection_probe.h"
#include "tools/tessera/openai_response.h"
#include "tools/tessera/serve_generate.h"

namespace tessera::cli {

namespace {

using json = nlohmann::ordered_json;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const HttpError& e) { send_json(res, e.status, error_json(e.message, e.type, e.param)); }

// Compares every byte whatever the first difference, so the time taken
// does not tell how much of a guess was right.
bool same_key(const std::string& given, const std::string& key) {
  unsigned char diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) diff |= (unsigned char)(given[i] ^ key[i % (key.empty() ? 1 : key.size())]);
  return diff == 0 && !key.empty();
}

struct Server {
  const ServeOptions& opt;
  ServerContext ctx;
  httplib::Server http;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<KvSender> kv_sender;      // --role prefill
  std::unique_ptr<KvReceiver> kv_receiver;  // --role decode
  std::string kv_address;                   // the receiver's HOST:PORT
  std::atomic<bool> load_failed{false};

  explicit Server(const ServeOptions& o) : opt(o), ctx(o) {}

  // The engine, or the 503 that says why there is none.
  Engine* ready(httplib::Response& res) {
    if (ctx.shutting_down) {
      send_error(res, {503, "the server is shutting down", "service_unavailable", ""});
      return nullptr;
    }
    Engine* e = ctx.engine.load();
    if (!e) send_error(res, {503, "the model is still loading; retry when /health answers 200", "service_unavailable", ""});
    return e;
  }

  void generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
    if (!ready(res)) return;
    auto started = Generation::start(ctx, endpoint, req.body);
    if (auto* e = std::get_if<HttpError>(&started)) return send_error(res, *e);
    std::shared_ptr<Generation> g = std::move(std::get<std::unique_ptr<Generation>>(started));
    if (!g->streaming()) {
      ConnectionProbe probe(req.remote_addr, req.remote_port);
      auto body = g->complete([&] { return probe.client_gone(); });
      if (auto* e = std::get_if<HttpError>(&body)) return send_error(res, *e);
      res.status = 200;
      res.set_content(std::get<std::string>(body), "application/json");
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [g](size_t, httplib::DataSink& sink) {
          std::string out;
          bool more = true;
          // Wait in short slices so a client that went away is noticed between tokens.
          while (out.empty() && more) {
            if (!sink.is_writable()) {
              g->cancel();
              return false;
            }
            more = g->next_events(&out, std::chrono::milliseconds(50));
          }
          if (!out.empty() && !sink.write(out.data(), out.size())) {
            g->cancel();
            return false;
          }
          if (!more) sink.done();
          return true;
        },
        // Also called when the client left before the stream began.
        [g](bool success) {
          if (!success) g->cancel();
        });
  }

  void tokenize(const httplib::Request& req, httplib::Response& res) {
    Engine* e = ready(res);
    if (!e) return;
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return send_error(res, {400, "the body must be a JSON object", "invalid_request_error", ""});
    auto it = body.find("prompt");
    if (it == body.end() || !it->is_string())
      return send_error(res, {400, "'prompt': expected a string", "invalid_request_error", "prompt"});
    if (!e->has_tokenizer())
      return send_error(res, {400, "the model '" + opt.served_model_name + "' has no tokenizer", "invalid_request_error", "prompt"});
    auto ids = e->encode(it->get<std::string>());
    if (!ids) return send_error(res, {400, "'prompt': " + ids.status().message(), "invalid_request_error", "prompt"});
    send_json(res, 200, {{"tokens", *ids}, {"count", ids->size()}, {"max_model_len", e->max_context()}});
  }

  void detokenize(const httplib::Request& req, httplib::Response& res) {
    Engine* e = ready(res);
    if (!e) return;
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return send_error(res, {400, "the body must be a JSON object", "invalid_request_error", ""});
    auto it = body.find("tokens");
    if (it == body.end() || !it->is_array()) return send_error(res, {400, "'tokens': expected an array of token ids", "invalid_request_error", "tokens"});
    // decode() gives the text of ids[1..]: a leading BOS is what it skips.
    std::vector<int32_t> ids = {e->bos_id()};
    for (size_t i = 0; i < it->size(); ++i) {
      const json& t = (*it)[i];
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= e->config().vocab_size)
        return send_error(res, {400, "'tokens[" + std::to_string(i) + "]': expected a token id in [0, " + std::to_string(e->config().vocab_size) + ")",
                                "invalid_request_error", "tokens"});
      if (i == 0 && t.get<int32_t>() == e->bos_id()) continue;
      ids.push_back(t.get<int32_t>());
    }
    if (!e->has_tokenizer())
      return send_error(res, {400, "the model '" + opt.served_model_name + "' has no tokenizer", "invalid_request_error", "tokens"});
    auto text = e->decode(ids);
    if (!text) return send_error(res, {400, "'tokens': " + text.status().message(), "invalid_request_error", "tokens"});
    send_json(res, 200, {{"prompt", *text}});
  }

  // The API key, checked in each route's handler, once httplib has read the
  // body. A 401 from httplib's pre-routing handler (which runs before the
  // body is read) left the body on a kept-alive connection, where it was
  // read as the next request: that request got a bogus 400 (the openai npm
  // client, whose connections are pooled, met it now and then).
  bool authorized(const httplib::Request& req, httplib::Response& res) const {
    if (opt.api_key.empty()) return true;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.compare(0, prefix.size(), prefix) == 0 && same_key(auth.substr(prefix.size()), opt.api_key)) return true;
    send_error(res, {401, "invalid or missing API key (Authorization: Bearer KEY)", "authentication_error", ""});
    return false;
  }

  // A handler behind the API key (/health and /metrics stay open to probes and scrapers).
  template <typename Handler>
  httplib::Server::Handler keyed(Handler h) {
    return [this, h](const httplib::Request& q, httplib::Response& r) {
      if (authorized(q, r)) h(q, r);
    };
  }

  void routes() {
    http.Post("/v1/completions", keyed([this](const httplib::Request& q, httplib::Response& r) { generate(Endpoint::completions, q, r); }));
    http.Post("/v1/chat/completions",
              keyed([this](const httplib::Request& q, httplib::Response& r) { generate(Endpoint::chat_completions, q, r); }));
    http.Post("/tokenize", keyed([this](const httplib::Request& q, httplib::Response& r) { tokenize(q, r); }));
    http.Post("/detokenize", keyed([this](const httplib::Request& q, httplib::Response& r) { detokenize(q, r); }));
    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (ctx.shutting_down) return send_json(res, 503, {{"status", "shutting down"}});
      if (!ctx.engine.load()) return send_json(res, 503, {{"status", "loading"}});
      send_json(res, 200, {{"status", "ok"}});
    });
    http.Get("/v1/models", keyed([this](const httplib::Request&, httplib::Response& res) {
      json m = {{"id", opt.served_model_name}, {"object", "model"}, {"created", (int64_t)std::time(nullptr)}, {"owned_by", "tessera"}};
      if (Engine* e = ctx.engine.load()) m["max_model_len"] = e->max_context();
      send_json(res, 200, {{"object", "list"}, {"data", json::array({m})}});
    }));
    // What a router balances by: the queue and the KV cache's use.
    http.Get("/load", [this](const httplib::Request&, httplib::Response& res) {
      Engine* e = ctx.engine.load();
      if (!e || ctx.shutting_down) return send_json(res, 503, {{"status", e ? "shutting down" : "loading"}});
      const EngineMetrics m = e->metrics();
      json j = {{"role", opt.role.empty() ? "colocated" : opt.role},
                {"running", m.running},
                {"waiting", m.waiting},
                {"requests", ctx.engine_requests.load()},
                {"kv_blocks_total", m.kv_blocks_total},
                {"kv_blocks_used", m.kv_blocks_used},
                {"kv_usage", m.kv_blocks_total > 0 ? (double)m.kv_blocks_used / m.kv_blocks_total : 0.0}};
      if (kv_receiver) {
        j["kv_address"] = kv_address;
        j["kv_pending_transfers"] = kv_receiver->pending_transfers();
      }
      send_json(res, 200, j);
    });
    // A router whose prefill worker failed: the transfer will not come.
    http.Post("/kv/abort", keyed([this](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body, nullptr, false);
      if (!kv_receiver) return send_error(res, {404, "no KV receiver here (--role decode has one)", "not_found_error", ""});
      if (body.is_discarded() || !body.is_object() || !body.contains("id") || !body["id"].is_string())
        return send_error(res, {400, "'id': expected the transfer id (hex)", "invalid_request_error", "id"});
      const uint64_t id = std::strtoull(body["id"].get<std::string>().c_str(), nullptr, 16);
      const std::string why = body.contains("error") && body["error"].is_string() ? body["error"].get<std::string>() : "aborted by the router";
      kv_receiver->abort(id, why);
      send_json(res, 200, {{"aborted", body["id"]}});
    }));
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      Engine* e = ctx.engine.load();
      res.set_content(ctx.metrics.text(e ? e->metrics() : EngineMetrics{}), "text/plain; version=0.0.4");
    });
    // Errors httplib answers itself (404, 413, 400) get OpenAI's error body.
    http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      HttpError e{res.status, "", "invalid_request_error", ""};
      if (res.status == 404) e.message = "no route " + req.method + " " + req.path;
      else if (res.status == 413) e.message = "the body is larger than the server's limit (--max-body-bytes)";
      else e.message = "HTTP " + std::to_string(res.status);
      if (res.status == 404) e.type = "not_found_error";
      send_error(res, e);
      return httplib::Server::HandlerResponse::Handled;
    }));
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& ex) {
        what = ex.what();
      } catch (...) {
      }
      send_error(res, {500, "internal error: " + what, "internal_error", ""});
    });
  }

  void configure() {
    const int threads = opt.threads;
    http.new_task_queue = [threads] { return new httplib::ThreadPool((size_t)threads); };
    http.set_payload_max_length(opt.max_body_bytes);
    http.set_read_timeout(opt.read_timeout_s, 0);
    http.set_write_timeout(opt.write_timeout_s, 0);
    http.set_keep_alive_timeout(opt.idle_timeout_s);
  }
};

}  // namespace

int serve(const ServeOptions& options) {
  // Signals go to the waiting loop below only: every thread made from here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Server s(options);
  s.configure();
  s.routes();
  int port = options.port;
  if (port == 0) {
    port = s.http.bind_to_any_port(options.host);
    if (port < 0) {
      std::fprintf(stderr, "tessera: cannot listen on %s (any port)\n", options.host.c_str());
      return 1;
    }
  } else if (!s.http.bind_to_port(options.host, port)) {
    std::fprintf(stderr, "tessera: cannot listen on %s:%d\n", options.host.c_str(), port);
    return 1;
  }
  std::printf("listening on http://%s:%d\n", options.host.c_str(), port);
  std::fflush(stdout);
  std::thread listener([&] { s.http.listen_after_bind(); });

  std::thread loader([&] {
    auto e = Engine::open(options.engine);
    if (!e) {
      std::fprintf(stderr, "tessera: %s\n", e.status().message().c_str());
      s.load_failed = true;
      return;
    }
    s.engine = std::move(*e);
    KvTransferOptions kv;
    kv.timeout_ms = options.kv_timeout_ms;
    if (options.role == "decode") {
      auto r = KvReceiver::open(*s.engine, options.kv_host, options.kv_port, kv);
      if (!r) {
        std::fprintf(stderr, "tessera: %s\n", r.status().message().c_str());
        s.load_failed = true;
        return;
      }
      s.kv_receiver = std::move(*r);
      s.kv_address = options.kv_host + ":" + std::to_string(s.kv_receiver->port());
      std::fprintf(stderr, "tessera: decode worker: KV transfers on %s (UCX)\n", s.kv_address.c_str());
      s.ctx.kv_receiver = s.kv_receiver.get();
    } else if (options.role == "prefill") {
      auto snd = KvSender::open(*s.engine, kv);
      if (!snd) {
        std::fprintf(stderr, "tessera: %s\n", snd.status().message().c_str());
        s.load_failed = true;
        return;
      }
      s.kv_sender = std::move(*snd);
      // Say which granularity this device gives (docs/serving.md, "Granularity").
      if (s.engine->device().notifies_kv_writes)
        std::fprintf(stderr, "tessera: prefill worker: ships KV over UCX, layer by layer as each step writes it\n");
      else
        std::fprintf(stderr, "tessera: prefill worker: ships KV over UCX after each step (%s does not announce its KV writes)\n",
                     s.engine->device().backend.c_str());
      s.ctx.kv_sender = s.kv_sender.get();
    }
    for (const auto& note : s.engine->placement_notes()) std::fprintf(stderr, "tessera: %s\n", note.c_str());
    std::fprintf(stderr, "tessera: %s\n", s.engine->memory_summary().c_str());
    std::fprintf(stderr, "tessera: serving '%s' (context %d)\n", options.served_model_name.c_str(), s.engine->max_context());
    s.ctx.engine = s.engine.get();
  });

  int code = 0;
  for (;;) {
    timespec tick{0, 100'000'000};
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) {
      std::fprintf(stderr, "tessera: %s: draining\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
      break;
    }
    if (s.load_failed) {
      code = 1;
      break;
    }
  }
  // Refuse new work, let what runs finish until the deadline, then cancel the rest.
  s.ctx.shutting_down = true;
  loader.join();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.shutdown_timeout_s);
  while (s.ctx.generations.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (s.ctx.generations.load() > 0) {
    std::fprintf(stderr, "tessera: cancelling %d requests still running after %.1f s\n", s.ctx.generations.load(), options.shutdown_timeout_s);
    s.ctx.cancel_epoch.fetch_add(1);
    const auto hard = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (s.ctx.generations.load() > 0 && std::chrono::steady_clock::now() < hard) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  s.http.stop();
  listener.join();
  s.ctx.engine = nullptr;
  s.ctx.kv_sender = nullptr;
  s.ctx.kv_receiver = nullptr;
  s.kv_sender.reset();
  s.kv_receiver.reset();
  s.engine.reset();
  return code;
}

}  // namespace tessera::cli
