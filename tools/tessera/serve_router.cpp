// The router of disaggregated serving (serve_router.h): cpp-httplib's server
// in front, its client toward the workers.
#include "tools/tessera/serve_router.h"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

namespace tessera::cli {

namespace {

using json = nlohmann::ordered_json;

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type = "internal_error") {
  res.status = status;
  res.set_content(json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}}.dump(), "application/json");
}

// One worker as the router sees it: its URL, what its /load said last, and
// the requests the router sent it that have not come back.
struct Worker {
  std::string url, host;
  int port = 0;
  std::atomic<bool> healthy{false};
  std::atomic<int32_t> in_flight{0};
  mutable std::mutex mu;
  int32_t queue = 0;     // running + waiting, from /load
  double kv_usage = 0;   // from /load
  std::string kv_address;  // decode workers' --kv-listen

  httplib::Client client(int read_timeout_s) const {
    httplib::Client c(host, port);
    c.set_connection_timeout(2, 0);
    c.set_read_timeout(read_timeout_s, 0);
    c.set_write_timeout(30, 0);
    return c;
  }
  // The router's measure of how busy it is: requests queued there or on their
  // way, and for a decode worker the share of its KV cache in use (a full
  // cache makes new sequences wait however short the queue).
  double score(bool decode) const {
    std::lock_guard l(mu);
    return (double)(queue + in_flight.load()) + (decode ? 8.0 * kv_usage : 0.0);
  }
};

uint64_t random_id() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard l(mu);
  uint64_t id = 0;
  while (id == 0) id = rng() >> 4;  // 60 bits, as the KV wire's tags carry
  return id;
}

std::string hex(uint64_t v) {
  char b[20];
  std::snprintf(b, sizeof b, "%llx", (unsigned long long)v);
  return b;
}

// The SSE bytes a decode worker streams, handed from the upstream thread to
// the client's content provider.
struct Relay {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> chunks;
  bool headers = false, done = false;
  int status = 0;
  std::string error;  // the upstream connection failed (empty: it ended well)
  std::atomic<bool> client_gone{false};
};

struct Router {
  const RouterOptions& opt;
  httplib::Server http;
  std::vector<std::unique_ptr<Worker>> prefill, decode, colocated;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> requests{0}, failed{0};

  explicit Router(const RouterOptions& o) : opt(o) {
    for (auto* list : {&o.prefill, &o.decode, &o.colocated})
      for (const std::string& u : *list) {
        auto w = std::make_unique<Worker>();
        w->url = u;
        const std::string rest = u.substr(7);  // after http://
        const size_t colon = rest.rfind(':');
        w->host = rest.substr(0, colon);
        w->port = colon == std::string::npos ? 80 : std::atoi(rest.substr(colon + 1).c_str());
        (list == &o.prefill ? prefill : list == &o.decode ? decode : colocated).push_back(std::move(w));
      }
  }

  void poll_once() {
    for (auto* list : {&prefill, &decode, &colocated})
      for (auto& w : *list) {
        auto c = w->client(1);
        auto r = c.Get("/load");
        json j = r && r->status == 200 ? json::parse(r->body, nullptr, false) : json();
        if (!j.is_object()) {
          w->healthy = false;
          continue;
        }
        {
          std::lock_guard l(w->mu);
          w->queue = j.value("running", 0) + j.value("waiting", 0);
          w->kv_usage = j.value("kv_usage", 0.0);
          w->kv_address = j.value("kv_address", std::string());
        }
        const std::string want = list == &prefill ? "prefill" : list == &decode ? "decode" : "colocated";
        w->healthy = j.value("role", std::string()) == want && (want != "decode" || !w->kv_address.empty());
      }
  }

  Worker* pick(std::vector<std::unique_ptr<Worker>>& list, bool is_decode) {
    Worker* best = nullptr;
    double best_score = 0;
    for (auto& w : list) {
      if (!w->healthy) continue;
      const double s = w->score(is_decode);
      if (!best || s < best_score) best = w.get(), best_score = s;
    }
    return best;
  }

  bool ready() const {
    auto any = [](const std::vector<std::unique_ptr<Worker>>& l) {
      for (const auto& w : l)
        if (w->healthy) return true;
      return false;
    };
    return colocated.empty() ? any(prefill) && any(decode) : any(colocated);
  }

  void generate(const std::string& path, const httplib::Request& req, httplib::Response& res) {
    ++requests;
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return send_error(res, 400, "the body must be a JSON object", "invalid_request_error");
    const bool stream = body.value("stream", false);
    if (!colocated.empty()) {
      Worker* w = pick(colocated, true);
      if (!w) {
        ++failed;
        return send_error(res, 503, "no healthy worker", "service_unavailable");
      }
      res.set_header("X-Tessera-Decode", w->url);
      ++w->in_flight;
      return forward(w, path, req.body, stream, res);
    }
    Worker* p = pick(prefill, false);
    Worker* d = pick(decode, true);
    if (!p || !d) {
      ++failed;
      return send_error(res, 503, std::string("no healthy ") + (!p ? "prefill" : "decode") + " worker", "service_unavailable");
    }
    std::string kv_address;
    {
      std::lock_guard l(d->mu);
      kv_address = d->kv_address;
    }
    const std::string id = hex(random_id());
    json to_prefill = body;
    to_prefill["stream"] = false;
    to_prefill.erase("stream_options");
    to_prefill["kv_transfer"] = {{"id", id}, {"decode", kv_address}};
    json to_decode = body;
    to_decode["kv_transfer"] = {{"id", id}};

    // The prefill first: its answer comes once every block has crossed to
    // the decode worker and the transfer is committed there (the blocks
    // travel while the prompt computes, chunk by chunk). Only then does the
    // decode worker get the request, so a request queued behind others at
    // the prefill worker never waits out the decode worker's transfer timeout.
    // Which workers serve it, for operators and tests.
    res.set_header("X-Tessera-Prefill", p->url);
    res.set_header("X-Tessera-Decode", d->url);
    // Both count the request from now, so requests arriving together spread.
    ++p->in_flight;
    ++d->in_flight;
    auto pr = p->client(opt.read_timeout_s).Post(path.c_str(), to_prefill.dump(), "application/json");
    --p->in_flight;
    if (!pr || pr->status != 200) {
      --d->in_flight;
      ++failed;
      // Named by both workers: a decode worker that went away fails the
      // prefill's transfer to it.
      std::string why = "prefill worker " + p->url + " (for decode worker " + d->url + "): ";
      int status = 502;
      if (!pr) {
        why += "no answer (" + httplib::to_string(pr.error()) + ")";
        p->healthy = false;
      } else {
        json e = json::parse(pr->body, nullptr, false);
        why += e.is_object() && e.contains("error") && e["error"].is_object() ? e["error"].value("message", pr->body) : pr->body;
        status = pr->status;
      }
      // Whatever reached the decode worker of this transfer is dropped now.
      (void)d->client(5).Post("/kv/abort", json{{"id", id}, {"error", why}}.dump(), "application/json");
      return send_error(res, status, why, status < 500 ? "invalid_request_error" : "internal_error");
    }
    forward(d, path, to_decode.dump(), stream, res);
  }

  // Sends the request to worker d (whose in_flight the caller counted) and
  // relays its answer: whole, or its event stream as it comes.
  void forward(Worker* d, const std::string& path, const std::string& payload, bool stream, httplib::Response& res) {
    if (!stream) {
      auto c = d->client(opt.read_timeout_s);
      auto r = c.Post(path.c_str(), payload, "application/json");
      --d->in_flight;
      if (!r) {
        ++failed;
        d->healthy = false;
        return send_error(res, 502, "decode worker " + d->url + ": no answer (" + httplib::to_string(r.error()) + ")");
      }
      if (r->status != 200) ++failed;
      res.status = r->status;
      res.set_content(r->body, "application/json");
      return;
    }

    auto relay = std::make_shared<Relay>();
    // The upstream call on its own thread; the client's provider takes its bytes.
    std::thread upstream([this, d, relay, path, payload] {
      auto c = d->client(opt.read_timeout_s);
      httplib::Request up;
      up.method = "POST";
      up.path = path;
      up.body = payload;
      up.set_header("Content-Type", "application/json");
      up.response_handler = [relay](const httplib::Response& r) {
        std::lock_guard l(relay->mu);
        relay->status = r.status;
        relay->headers = true;
        relay->cv.notify_all();
        return true;
      };
      up.content_receiver = [relay](const char* data, size_t n, uint64_t, uint64_t) {
        if (relay->client_gone) return false;  // closes the connection: the decode worker cancels
        std::lock_guard l(relay->mu);
        relay->chunks.emplace_back(data, n);
        relay->cv.notify_all();
        return true;
      };
      auto r = c.send(up);
      --d->in_flight;
      std::lock_guard l(relay->mu);
      if (!r && !relay->client_gone) {
        relay->error = "decode worker " + d->url + " failed: " + httplib::to_string(r.error());
        d->healthy = false;
      }
      relay->done = true;
      relay->cv.notify_all();
    });
    {
      std::unique_lock l(relay->mu);
      relay->cv.wait(l, [&] { return relay->headers || relay->done; });
      if (!relay->headers || relay->status != 200) {
        // An error before the stream began: relay it as it came (or a 502).
        relay->cv.wait(l, [&] { return relay->done; });
        l.unlock();
        upstream.join();
        ++failed;
        if (!relay->headers) return send_error(res, 502, relay->error.empty() ? "decode worker " + d->url + ": no answer" : relay->error);
        std::string text;
        for (auto& ch : relay->chunks) text += ch;
        res.status = relay->status;
        res.set_content(text, "application/json");
        return;
      }
    }
    auto up_thread = std::make_shared<std::thread>(std::move(upstream));
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, relay](size_t, httplib::DataSink& sink) {
          std::string out;
          bool finished = false;
          {
            std::unique_lock l(relay->mu);
            relay->cv.wait_for(l, std::chrono::milliseconds(50), [&] { return !relay->chunks.empty() || relay->done; });
            while (!relay->chunks.empty()) {
              out += relay->chunks.front();
              relay->chunks.pop_front();
            }
            if (relay->done) {
              finished = true;
              if (!relay->error.empty()) {
                ++failed;
                out += "data: " + json{{"error", {{"message", relay->error}, {"type", "internal_error"}, {"param", nullptr}, {"code", nullptr}}}}.dump() +
                       "\n\ndata: [DONE]\n\n";
              }
            }
          }
          if (!sink.is_writable() || (!out.empty() && !sink.write(out.data(), out.size()))) {
            relay->client_gone = true;
            return false;
          }
          if (finished) sink.done();
          return true;
        },
        [relay, up_thread](bool success) {
          if (!success) relay->client_gone = true;
          up_thread->join();
        });
  }

  void routes() {
    http.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) { generate("/v1/completions", q, r); });
    http.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& r) { generate("/v1/chat/completions", q, r); });
    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      res.status = stopping ? 503 : ready() ? 200 : 503;
      res.set_content(json{{"status", stopping ? "shutting down" : ready() ? "ok" : "waiting for workers"}}.dump(), "application/json");
    });
    // Every worker as the router last saw it.
    http.Get("/load", [this](const httplib::Request&, httplib::Response& res) {
      json j = {{"role", "router"}, {"requests", requests.load()}, {"failed", failed.load()}, {"workers", json::array()}};
      for (auto* list : {&prefill, &decode, &colocated})
        for (auto& w : *list) {
          std::lock_guard l(w->mu);
          j["workers"].push_back({{"url", w->url},
                                  {"role", list == &prefill ? "prefill" : list == &decode ? "decode" : "colocated"},
                                  {"healthy", w->healthy.load()},
                                  {"queue", w->queue},
                                  {"in_flight", w->in_flight.load()},
                                  {"kv_usage", w->kv_usage}});
        }
      res.set_content(j.dump(), "application/json");
    });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      Worker* d = pick(colocated.empty() ? decode : colocated, true);
      if (!d) return send_error(res, 503, "no healthy worker", "service_unavailable");
      auto r = d->client(5).Get("/v1/models");
      if (!r) return send_error(res, 502, "decode worker " + d->url + ": no answer");
      res.status = r->status;
      res.set_content(r->body, "application/json");
    });
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (opt.api_key.empty() || req.path == "/health" || req.path == "/load") return httplib::Server::HandlerResponse::Unhandled;
      if (req.get_header_value("Authorization") == "Bearer " + opt.api_key) return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, 401, "invalid or missing API key (Authorization: Bearer KEY)", "authentication_error");
      return httplib::Server::HandlerResponse::Handled;
    });
  }
};

}  // namespace

int serve_router(const RouterOptions& options) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Router r(options);
  const int threads = options.threads;
  r.http.new_task_queue = [threads] { return new httplib::ThreadPool((size_t)threads); };
  r.http.set_read_timeout(30, 0);
  r.http.set_write_timeout(options.write_timeout_s, 0);
  r.routes();
  int port = options.port;
  if (port == 0) {
    port = r.http.bind_to_any_port(options.host);
    if (port < 0) {
      std::fprintf(stderr, "tessera: cannot listen on %s (any port)\n", options.host.c_str());
      return 1;
    }
  } else if (!r.http.bind_to_port(options.host, port)) {
    std::fprintf(stderr, "tessera: cannot listen on %s:%d\n", options.host.c_str(), port);
    return 1;
  }
  std::printf("listening on http://%s:%d\n", options.host.c_str(), port);
  std::fflush(stdout);
  if (options.colocated.empty())
    std::fprintf(stderr, "tessera: router over %zu prefill and %zu decode workers\n", options.prefill.size(), options.decode.size());
  else
    std::fprintf(stderr, "tessera: router over %zu colocated workers\n", options.colocated.size());
  std::thread listener([&] { r.http.listen_after_bind(); });
  std::thread poller([&] {
    while (!r.stopping) {
      r.poll_once();
      std::this_thread::sleep_for(std::chrono::milliseconds(options.poll_ms));
    }
  });
  for (;;) {
    timespec tick{0, 100'000'000};
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) break;
  }
  r.stopping = true;
  r.http.stop();
  listener.join();
  poller.join();
  return 0;
}

}  // namespace tessera::cli
