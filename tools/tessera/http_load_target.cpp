#include "tools/tessera/http_load_target.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace tessera::cli {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// "http://host:port[/v1][/]" -> "http://host:port".
Expected<std::string> base_url(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.size() >= 3 && url.compare(url.size() - 3, 3, "/v1") == 0) url.resize(url.size() - 3);
  if (url.rfind("http://", 0) != 0)
    return invalid_argument("--url: expected http://HOST:PORT, got '" + url + "' (https is not supported by the load generator)");
  return url;
}

class HttpLoadTarget final : public LoadTarget {
 public:
  HttpLoadTarget(std::string base, HttpTargetOptions o) : base_(std::move(base)), o_(std::move(o)) {}

  LoadOutcome run(const LoadRequest& in) override {
    LoadOutcome out;
    httplib::Client cli(base_);
    set_timeouts(cli);
    json body = {{"model", o_.model},  {"max_tokens", in.max_tokens}, {"temperature", 0},
                 {"stream", true},     {"ignore_eos", true},          {"stream_options", {{"include_usage", true}}}};
    if (!in.prompt_ids.empty()) body["prompt"] = in.prompt_ids;
    else body["prompt"] = in.prompt_text;
    std::string buffer, error_body;
    int64_t chunks_seen = 0;
    bool done = false;
    const auto sent = Clock::now();
    // One SSE event: a text chunk (timed), the usage chunk, or [DONE].
    auto on_event = [&](const std::string& data) {
      if (data == "[DONE]") {
        done = true;
        return;
      }
      const json j = json::parse(data, nullptr, false);
      if (j.is_discarded()) return;
      if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
        const json& c = j["choices"][0];
        if (c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty()) {
          out.chunk_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
          ++chunks_seen;
        }
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        out.prompt_tokens = j["usage"].value("prompt_tokens", (int64_t)0);
        out.completion_tokens = j["usage"].value("completion_tokens", (int64_t)0);
      }
    };
    int status = 0;
    httplib::Headers headers;
    if (!o_.api_key.empty()) headers.emplace("Authorization", "Bearer " + o_.api_key);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = headers;
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.response_handler = [&](const httplib::Response& r) {
      status = r.status;
      return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      if (status != 200) {
        error_body.append(data, n);
        return true;
      }
      buffer.append(data, n);
      for (size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
        const std::string event = buffer.substr(0, end);
        buffer.erase(0, end + 2);
        if (event.rfind("data: ", 0) == 0) on_event(event.substr(6));
      }
      return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    if (!cli.send(req, res, err)) {
      out.error = "POST " + base_ + "/v1/completions: " + httplib::to_string(err);
      return out;
    }
    if (status != 200) {
      out.error = "POST " + base_ + "/v1/completions: HTTP " + std::to_string(status) + ": " + error_body.substr(0, 300);
      return out;
    }
    if (!done) {
      out.error = "POST " + base_ + "/v1/completions: the stream ended without data: [DONE]";
      return out;
    }
    if (out.completion_tokens == 0) out.completion_tokens = chunks_seen;
    out.ok = true;
    return out;
  }
  int32_t vocab_size() const override { return o_.vocab_size; }
  std::string describe() const override { return base_ + " (model " + o_.model + ")"; }

  Status resolve_model() {
    if (!o_.model.empty()) return Status::ok();
    httplib::Client cli(base_);
    set_timeouts(cli);
    httplib::Headers headers;
    if (!o_.api_key.empty()) headers.emplace("Authorization", "Bearer " + o_.api_key);
    auto res = cli.Get("/v1/models", headers);
    if (!res) return io_error("GET " + base_ + "/v1/models: " + httplib::to_string(res.error()));
    if (res->status != 200) return io_error("GET " + base_ + "/v1/models: HTTP " + std::to_string(res->status));
    const json j = json::parse(res->body, nullptr, false);
    if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() || !j["data"][0].contains("id"))
      return invalid_argument("GET " + base_ + "/v1/models: no model listed (give --served-model)");
    o_.model = j["data"][0]["id"].get<std::string>();
    return Status::ok();
  }

 private:
  void set_timeouts(httplib::Client& cli) const {
    const auto t = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(o_.timeout_s));
    cli.set_read_timeout(t);
    cli.set_write_timeout(t);
    cli.set_connection_timeout(std::chrono::seconds(10));
  }
  std::string base_;
  HttpTargetOptions o_;
};

}  // namespace

Expected<std::unique_ptr<LoadTarget>> open_http_load_target(const HttpTargetOptions& o) {
  auto base = base_url(o.url);
  if (!base) return base.status();
  auto t = std::make_unique<HttpLoadTarget>(*base, o);
  if (Status s = t->resolve_model(); !s.is_ok()) return s;
  return std::unique_ptr<LoadTarget>(std::move(t));
}

}  // namespace tessera::cli
