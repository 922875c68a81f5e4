#pragma once
// `tessera serve --role router`: the OpenAI API in front of prefill and
// decode workers (`tessera serve --role prefill|decode`). Each request goes
// to the prefill worker with the shortest queue and the decode worker with
// the shortest queue and the most free KV cache (both read from the
// workers' /load), under one transfer id: the prefill worker ships the
// prompt's KV blocks to the decode worker over UCX, the decode worker
// continues and streams tokens back through the router. A prefill worker
// that fails aborts the transfer on the decode worker, so the request ends
// with an error instead of waiting; a decode worker that fails mid-stream
// ends its streams with an error event.
#include <string>
#include <vector>

namespace tessera::cli {

struct RouterOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::vector<std::string> prefill, decode;  // worker base URLs, http://HOST:PORT
  // Instead: plain `tessera serve` workers, each request served whole by the
  // least loaded (the colocated baseline disaggregation is measured against).
  std::vector<std::string> colocated;
  std::string api_key;
  int threads = 64;
  int read_timeout_s = 300, write_timeout_s = 30;
  int poll_ms = 50;  // how often each worker's /load is read
};

// Listens, prints "listening on http://HOST:PORT", serves until SIGINT or SIGTERM. The exit code.
int serve_router(const RouterOptions& options);

}  // namespace tessera::cli
