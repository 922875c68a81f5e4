#pragma once
// `tessera serve`'s HTTP server: OpenAI's routes over one Engine.
#include <cstddef>
#include <cstdint>
#include <string>

#include <tessera/engine.h>
#include "tools/tessera/openai_request.h"

namespace tessera::cli {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (printed)
  std::string api_key;            // empty: no authentication
  std::string served_model_name;  // the name clients send as "model"
  std::string chat_template;      // --chat-template's source; empty: the model's own (Engine::chat_template)
  EngineOptions engine;
  RequestLimits limits;
  size_t max_body_bytes = 8u << 20;
  int32_t max_waiting_requests = 256;  // engine requests beyond max_num_seqs before 429
  int threads = 64;                    // HTTP worker threads (a stream holds one while it runs)
  int read_timeout_s = 30, write_timeout_s = 30, idle_timeout_s = 5;
  double shutdown_timeout_s = 10;
  // Disaggregated serving (docs/server.md, "Roles"): "" serves alone; a
  // "prefill" worker runs prompts and ships their KV to a decode worker; a
  // "decode" worker takes them on its --kv-listen address and decodes; the
  // "router" (serve_router.h) serves the API over both.
  std::string role;
  std::string kv_host = "127.0.0.1";  // --kv-listen, decode
  int kv_port = 0;
  int kv_timeout_ms = 10000;
};

// Listens, prints "listening on http://HOST:PORT", loads the model in the
// background (/health is 503 until it is ready), and serves until SIGINT or
// SIGTERM. Returns the exit code.
int serve(const ServeOptions& options);

}  // namespace tessera::cli
