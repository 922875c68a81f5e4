// tessera serve: an OpenAI-compatible HTTP server over the serving engine
// (docs/server.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <tessera/tessera.h>

#include "tools/tessera/cli_common.h"
#include "tools/tessera/engine_flags.h"
#include "tools/tessera/serve_http.h"

namespace tessera::cli {

namespace {

struct ServeFlags {
  std::string model, tokenizer, chat_template_file;
  ModelFlags model_flags;
  EngineFlags engine;
  ServeOptions serve;
} f;

int serve_main() {
  // A missing file fails before listening; anything else about it fails when
  // the background load reads it (one line, exit 1).
  std::error_code ec;
  if (!synthetic_model_type(f.model) && !std::filesystem::is_regular_file(f.model, ec)) return fail(io_error(f.model + ": no such file"));
  ServeOptions o = f.serve;
  o.engine = f.engine.options(f.model_flags.options(f.model, f.tokenizer));
  o.engine.max_num_batched_tokens = std::max(o.engine.max_num_batched_tokens, o.engine.max_num_seqs);
  if (o.served_model_name.empty()) o.served_model_name = std::filesystem::path(f.model).filename().string();
  if (!f.chat_template_file.empty()) {
    std::ifstream in(f.chat_template_file, std::ios::binary);
    if (!in) return fail(io_error(f.chat_template_file + ": cannot open"));
    std::ostringstream ss;
    ss << in.rdbuf();
    o.chat_template = ss.str();
  }
  // Each stream holds an HTTP thread while it runs: room for a full batch and its queue.
  if (o.threads <= 0) o.threads = std::clamp(o.engine.max_num_seqs + 16, 16, 512);
  return serve(o);
}

}  // namespace

Subcommand add_serve(CLI::App& app) {
  CLI::App* s = app.add_subcommand("serve", "serve a model over an OpenAI-compatible HTTP API (docs/server.md)");
  ServeOptions& o = f.serve;
  o.threads = 0;
  s->add_option("-m,--model", f.model, "model file (GGUF or llama2.c .bin), or synthetic[:TYPE], the bench model")->required();
  s->add_option("-z,--tokenizer", f.tokenizer, "llama2.c tokenizer.bin (default: the model's own)");
  s->add_option("--host", o.host, "address to listen on (default 127.0.0.1)");
  s->add_option("--port", o.port, "port to listen on; 0 picks a free one (default 8080)")->check(CLI::Range(0, 65535));
  s->add_option("--api-key", o.api_key, "require 'Authorization: Bearer KEY' on /v1/*, /tokenize and /detokenize");
  s->add_option("--served-model-name", o.served_model_name, "the model's name in requests and responses (default: the file's name)");
  s->add_option("--chat-template", f.chat_template_file, "a Jinja chat template file for /v1/chat/completions (default: the model's own)");
  s->add_option("--max-body-bytes", o.max_body_bytes, "larger request bodies are refused with 413 (default 8 MiB)")->check(CLI::Range(1024.0, 1e12));
  s->add_option("--max-n", o.limits.max_n, "most choices one request may ask for (\"n\", default 16)")->check(CLI::Range(1, 1024));
  s->add_option("--max-tokens-limit", o.limits.max_tokens, "most tokens one request may generate (default 0: the context length)")
      ->check(CLI::Range(0, 1 << 24));
  s->add_option("--max-logprobs", o.limits.max_logprobs, "most alternatives per token in logprobs (default 20)")->check(CLI::Range(0, 1000));
  s->add_option("--max-prompts", o.limits.max_prompts, "most prompts in one /v1/completions body (default 64)")->check(CLI::Range(1, 100000));
  s->add_option("--max-waiting-requests", o.max_waiting_requests,
                "requests that may wait beyond the running batch; more are refused with 429 (default 256)")
      ->check(CLI::Range(0, 1 << 20));
  s->add_option("--threads", o.threads, "HTTP worker threads; each running stream holds one (default: --max-num-seqs + 16)")->check(CLI::Range(1, 4096));
  s->add_option("--read-timeout", o.read_timeout_s, "seconds to wait for a request's bytes (default 30)")->check(CLI::Range(1, 86400));
  s->add_option("--write-timeout", o.write_timeout_s, "seconds to wait for a client to take response bytes (default 30)")->check(CLI::Range(1, 86400));
  s->add_option("--idle-timeout", o.idle_timeout_s, "seconds a kept-alive connection may sit idle (default 5)")->check(CLI::Range(1, 86400));
  s->add_option("--shutdown-timeout", o.shutdown_timeout_s,
                "on SIGTERM/SIGINT, seconds to let running requests finish before cancelling them (default 10)")
      ->check(CLI::Range(0.0, 86400.0));
  f.model_flags.add(*s);
  f.engine.add(*s);
  return {s, serve_main};
}

}  // namespace tessera::cli
