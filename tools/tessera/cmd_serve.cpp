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
#include "tools/tessera/serve_router.h"

#include <tessera/disagg.h>

namespace tessera::cli {

namespace {

struct ServeFlags {
  std::string model, tokenizer, chat_template_file;
  ModelFlags model_flags;
  EngineFlags engine;
  ServeOptions serve;
  std::string kv_listen;
  std::vector<std::string> prefill_urls, decode_urls, colocated_urls;
} f;

CLI::App* serve_app = nullptr;
bool given(const char* flag) { return serve_app->get_option(flag)->count() > 0; }

// The role flags, checked together: each refusal is one line naming the flag.
Status check_roles() {
  const std::string& role = f.serve.role;
  if (!role.empty() && role != "prefill" && role != "decode" && role != "router")
    return invalid_argument("--role: '" + role + "' not in {prefill,decode,router}");
  if (!f.kv_listen.empty() && role != "decode") return invalid_argument("--kv-listen: only with --role decode");
  if ((!f.prefill_urls.empty() || !f.decode_urls.empty() || !f.colocated_urls.empty()) && role != "router")
    return invalid_argument(std::string(!f.prefill_urls.empty() ? "--prefill" : !f.decode_urls.empty() ? "--decode" : "--colocated") +
                            ": only with --role router");
  if (role == "router") {
    if (!f.colocated_urls.empty() && (!f.prefill_urls.empty() || !f.decode_urls.empty()))
      return invalid_argument("--colocated: not with --prefill or --decode (a router serves one way)");
    if (f.colocated_urls.empty()) {
      if (f.prefill_urls.empty()) return invalid_argument("--prefill: --role router needs at least one prefill worker URL");
      if (f.decode_urls.empty()) return invalid_argument("--decode: --role router needs at least one decode worker URL");
    }
    for (const auto* list : {&f.prefill_urls, &f.decode_urls, &f.colocated_urls})
      for (const std::string& u : *list)
        if (u.rfind("http://", 0) != 0)
          return invalid_argument(std::string(list == &f.prefill_urls ? "--prefill" : list == &f.decode_urls ? "--decode" : "--colocated") +
                                  ": '" + u + "' is not an http://HOST:PORT URL");
    if (!f.model.empty()) return invalid_argument("-m: --role router serves no model itself (its workers do)");
    return Status::ok();
  }
  if (f.model.empty()) return invalid_argument("-m: required (a model file, or synthetic[:TYPE])");
  if ((role == "prefill" || role == "decode") && !disaggregation_available())
    return unsupported("--role " + role + ": built without UCX");
  if (role == "decode" && !f.kv_listen.empty()) {
    const size_t colon = f.kv_listen.rfind(':');
    if (colon == std::string::npos || colon == 0) return invalid_argument("--kv-listen: expected HOST:PORT, got '" + f.kv_listen + "'");
    f.serve.kv_host = f.kv_listen.substr(0, colon);
    try {
      size_t used = 0;
      f.serve.kv_port = std::stoi(f.kv_listen.substr(colon + 1), &used);
      if (used != f.kv_listen.size() - colon - 1 || f.serve.kv_port < 0 || f.serve.kv_port > 65535) throw std::out_of_range("port");
    } catch (const std::exception&) {
      return invalid_argument("--kv-listen: port '" + f.kv_listen.substr(colon + 1) + "' is not a number in [0, 65535]");
    }
  }
  return Status::ok();
}

int router_main() {
  RouterOptions o;
  o.host = f.serve.host;
  o.port = f.serve.port;
  o.prefill = f.prefill_urls;
  o.decode = f.decode_urls;
  o.colocated = f.colocated_urls;
  o.api_key = f.serve.api_key;
  if (f.serve.threads > 0) o.threads = f.serve.threads;
  return serve_router(o);
}

int serve_main() {
  if (Status st = check_roles(); !st.is_ok()) return fail(st);
  if (f.serve.role == "router") return router_main();
  // A missing file fails before listening; anything else about it fails when
  // the background load reads it (one line, exit 1).
  std::error_code ec;
  if (!synthetic_model_type(f.model) && !std::filesystem::is_regular_file(f.model, ec)) return fail(io_error(f.model + ": no such file"));
  ServeOptions o = f.serve;
  o.engine = f.engine.options(f.model_flags.options(f.model, f.tokenizer));
  // Each rank of a split model holds part of every block; only rank 0's engine would be moved.
  if ((o.role == "prefill" || o.role == "decode") && (o.engine.model.tensor_parallel > 1 || o.engine.model.pipeline_parallel > 1))
    return fail(invalid_argument("--role " + o.role + ": not with --tensor-parallel or --pipeline-parallel (each rank holds part of the KV cache)"));
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
  serve_app = s;
  ServeOptions& o = f.serve;
  o.threads = 0;
  s->add_option("-m,--model", f.model, "model file (GGUF or llama2.c .bin), or synthetic[:TYPE], the bench model (not with --role router)");
  s->add_option("--role", o.role,
                "disaggregated serving (docs/server.md, \"Roles\"): prefill (run prompts, ship their KV over UCX), decode (take "
                "KV on --kv-listen and decode), router (the API over --prefill and --decode workers); default: serve alone");
  s->add_option("--kv-listen", f.kv_listen, "--role decode: UCX address KV transfers arrive on, HOST:PORT (default 127.0.0.1:0, a free port)");
  s->add_option("--kv-timeout-ms", o.kv_timeout_ms, "--role prefill, decode: the longest a KV transfer may wait on its peer (default 10000)")
      ->check(CLI::Range(1, 3600000));
  s->add_option("--prefill", f.prefill_urls, "--role router: prefill workers' URLs, http://HOST:PORT, comma-separated")->delimiter(',');
  s->add_option("--decode", f.decode_urls, "--role router: decode workers' URLs, http://HOST:PORT, comma-separated")->delimiter(',');
  s->add_option("--colocated", f.colocated_urls,
                "--role router, instead of --prefill/--decode: plain workers' URLs, each request served whole by the least loaded")
      ->delimiter(',');
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
