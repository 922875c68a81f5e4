#pragma once
// `tessera bench serve --url`: the load generator's requests sent to any
// OpenAI-compatible server as streamed /v1/completions.
#include <memory>
#include <string>

#include <tessera/load_bench.h>

namespace tessera::cli {

struct HttpTargetOptions {
  std::string url;         // http://HOST:PORT (a trailing /v1 is allowed)
  std::string model;       // the "model" field; empty: the first of GET /v1/models
  std::string api_key;     // sent as a bearer token when set
  int32_t vocab_size = 256;  // random prompt ids are drawn below this
  double timeout_s = 600;
};

Expected<std::unique_ptr<LoadTarget>> open_http_load_target(const HttpTargetOptions& o);

}  // namespace tessera::cli
