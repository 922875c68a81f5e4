#pragma once
// One generation request of the server, from its body to its response or
// its event stream, without HTTP: serve_http.cpp routes to it, and a
// client that goes away cancels it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <optional>
#include <variant>

#include <tessera/disagg.h>
#include <tessera/engine.h>
#include "tools/tessera/openai_request.h"
#include "tools/tessera/serve_http.h"
#include "tools/tessera/serve_metrics.h"

namespace tessera::cli {

// An error as the client sees it: an HTTP status and OpenAI's error object.
struct HttpError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;
};

// What every request shares: the options, the engine once it is loaded,
// the metrics and the counts that admission and shutdown read.
struct ServerContext {
  explicit ServerContext(const ServeOptions& o) : options(o) {}
  const ServeOptions& options;
  std::atomic<Engine*> engine{nullptr};  // null while loading
  std::atomic<bool> shutting_down{false};
  ServerMetrics metrics;
  std::atomic<int32_t> engine_requests{0};  // submitted and not yet finished
  std::atomic<int32_t> generations{0};      // HTTP generation requests in progress
  std::atomic<uint64_t> cancel_epoch{0};    // bumped at shutdown: every generation cancels itself
  // Disaggregation (--role): set once the engine is loaded.
  std::atomic<KvSender*> kv_sender{nullptr};      // prefill
  std::atomic<KvReceiver*> kv_receiver{nullptr};  // decode
};

// A router's "kv_transfer" field: {"id": "HEX", "decode": "HOST:PORT"} to a
// prefill worker, {"id": "HEX"} to a decode worker.
struct KvTransferField {
  uint64_t id = 0;
  std::string decode;
};
// The field of a body, or none; a malformed one is the 400 naming it.
std::variant<std::optional<KvTransferField>, HttpError> kv_transfer_field(const std::string& body);

class Generation {
 public:
  // Checks the body, encodes and submits its prompts; a refusal is the HttpError.
  static std::variant<std::unique_ptr<Generation>, HttpError> start(ServerContext& ctx, Endpoint endpoint, const std::string& body);
  // Cancels what is still running and records the metrics of what ran.
  ~Generation();

  bool streaming() const;
  // Not streamed: waits for every sequence; the response body or the error.
  // client_gone is asked between waits: once it says yes, every sequence
  // ends and the error is 499 (nobody reads it).
  std::variant<std::string, HttpError> complete(const std::function<bool()>& client_gone);
  // Streamed: appends the SSE events that are ready (waiting at most
  // `wait` for one); false once the last ("data: [DONE]") was appended.
  bool next_events(std::string* out, std::chrono::milliseconds wait);
  // The client went away: end every sequence now.
  void cancel();

  struct State;

 private:
  explicit Generation(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace tessera::cli
