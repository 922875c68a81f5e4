// tessera batch: the OpenAI Batch format over the serving engine, for
// throughput, resumable (docs/server.md, "Batch").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "tools/tessera/batch_input.h"
#include "tools/tessera/batch_journal.h"
#include "tools/tessera/cli_common.h"
#include "tools/tessera/engine_flags.h"
#include "tools/tessera/openai_response.h"
#include "tools/tessera/progress.h"
#include "tools/tessera/serve_generate.h"

namespace tessera::cli {

namespace {

struct BatchFlags {
  std::string model, tokenizer, chat_template_file, input, output, served_model_name;
  int32_t in_flight = 0;
  ModelFlags model_flags;
  EngineFlags engine;
  RequestLimits limits;
} f;

using Json = nlohmann::ordered_json;

// OpenAI's batch output object for line l: its id and custom_id (or, with
// none, custom_id null and the line number: BatchJournal::key_of reads both).
Json output_head(const BatchLine& l) {
  Json j;
  j["id"] = "batch_req_" + std::to_string(l.line);
  if (l.custom_id.empty()) {
    j["custom_id"] = nullptr;
    j["line"] = l.line;
  } else {
    j["custom_id"] = l.custom_id;
  }
  return j;
}

// An answer: the status and body the server would have sent.
std::string output_line(const BatchLine& l, int status, const Json& body) {
  Json j = output_head(l);
  j["response"] = {{"status_code", status}, {"request_id", "req_" + std::to_string(l.line)}, {"body", body}};
  j["error"] = nullptr;
  return dump(j);
}

// A line that is not a request.
std::string refused_line(const BatchLine& l, const std::string& message) {
  Json j = output_head(l);
  j["response"] = nullptr;
  j["error"] = {{"code", "invalid_request"}, {"message", message}};
  return dump(j);
}

// Roughly how long a request's prompt is, to interleave long and short ones.
size_t prompt_weight(const BatchLine& l) {
  if (l.body.contains("messages")) return l.body["messages"].dump().size();
  if (l.body.contains("prompt")) return l.body["prompt"].dump().size();
  return 0;
}

// Longest, shortest, second longest, second shortest, ...: long prompts
// spread over the run, each next to short ones whose decodes share its steps.
std::vector<size_t> interleaved(std::vector<size_t> idx, const std::vector<BatchLine>& lines) {
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return prompt_weight(lines[a]) > prompt_weight(lines[b]); });
  std::vector<size_t> out;
  out.reserve(idx.size());
  for (size_t lo = 0, hi = idx.size(); lo < hi;) {
    out.push_back(idx[lo++]);
    if (lo < hi) out.push_back(idx[--hi]);
  }
  return out;
}

int64_t completion_tokens(const std::string& body) {
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.contains("usage")) return 0;
  return j["usage"].value("completion_tokens", (int64_t)0);
}

int batch_main() {
  auto lines = read_batch_input(f.input);
  if (!lines) return fail(lines.status());
  auto journal = BatchJournal::open(f.output);
  if (!journal) return fail(journal.status());
  BatchJournal& out = *journal;
  std::vector<size_t> todo;
  int64_t already = 0;
  for (size_t i = 0; i < lines->size(); ++i) {
    const BatchLine& l = (*lines)[i];
    if (out.done(BatchJournal::key_for(l.custom_id, l.line))) ++already;
    else todo.push_back(i);
  }
  if (already > 0 || out.torn_bytes() > 0)
    std::fprintf(stderr, "batch: resuming %s: %lld of %zu requests done%s\n", f.output.c_str(), (long long)already, lines->size(),
                 out.torn_bytes() > 0 ? (", a torn last line of " + std::to_string(out.torn_bytes()) + " bytes cut").c_str() : "");
  Progress progress((int64_t)lines->size(), already, stderr);
  std::mutex out_mu;
  Status write_error = Status::ok();
  auto write = [&](const BatchLine& l, const std::string& text, int64_t tokens) {
    std::lock_guard lock(out_mu);
    if (!write_error.is_ok()) return;
    write_error = out.append(BatchJournal::key_for(l.custom_id, l.line), text);
    progress.advance(tokens);
  };
  // Lines refused as they were read answer first.
  std::vector<size_t> runnable;
  for (size_t i : todo) {
    const BatchLine& l = (*lines)[i];
    if (!l.error.empty()) write(l, refused_line(l, f.input + ":" + std::to_string(l.line) + ": " + l.error), 0);
    else runnable.push_back(i);
  }
  if (!runnable.empty()) {
    ServeOptions so;
    so.engine = f.engine.options(f.model_flags.options(f.model, f.tokenizer));
    so.engine.max_num_batched_tokens = std::max(so.engine.max_num_batched_tokens, so.engine.max_num_seqs);
    so.served_model_name = f.served_model_name.empty() ? std::filesystem::path(f.model).filename().string() : f.served_model_name;
    so.limits = f.limits;
    so.max_waiting_requests = 1 << 30;  // the workers below are the bound
    auto engine = Engine::open(so.engine);
    if (!engine) return fail(engine.status());
    if (!f.chat_template_file.empty()) {
      std::ifstream in(f.chat_template_file, std::ios::binary);
      if (!in) return fail(io_error(f.chat_template_file + ": cannot open"));
      std::ostringstream ss;
      ss << in.rdbuf();
      so.chat_template = ss.str();
    } else {
      so.chat_template = (*engine)->chat_template();
    }
    ServerContext ctx(so);
    ctx.engine.store(engine->get());
    const std::vector<size_t> order = interleaved(runnable, *lines);
    // Enough requests in flight to keep every sequence slot busy and a queue
    // behind them; each worker holds one.
    const int32_t workers =
        (int32_t)std::min<size_t>(order.size(), (size_t)(f.in_flight > 0 ? f.in_flight : std::max(8, 2 * so.engine.max_num_seqs)));
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (int32_t w = 0; w < workers; ++w)
      pool.emplace_back([&] {
        for (size_t k; (k = next.fetch_add(1)) < order.size();) {
          const BatchLine& l = (*lines)[order[k]];
          Json body = l.body;
          body.erase("model");  // the batch serves one model, whatever the line names
          body["stream"] = false;
          const Endpoint ep = l.url == "/v1/chat/completions" ? Endpoint::chat_completions : Endpoint::completions;
          auto started = Generation::start(ctx, ep, dump(body));
          if (auto* e = std::get_if<HttpError>(&started)) {
            write(l, output_line(l, e->status, error_json(e->message, e->type, e->param)), 0);
            continue;
          }
          auto result = std::get<std::unique_ptr<Generation>>(started)->complete([] { return false; });
          if (auto* e = std::get_if<HttpError>(&result)) write(l, output_line(l, e->status, error_json(e->message, e->type, e->param)), 0);
          else {
            const std::string& text = std::get<std::string>(result);
            write(l, output_line(l, 200, Json::parse(text)), completion_tokens(text));
          }
        }
      });
    for (auto& t : pool) t.join();
  }
  progress.finish();
  if (!write_error.is_ok()) return fail(write_error);
  std::fprintf(stderr, "batch: %zu requests answered in %s\n", lines->size(), f.output.c_str());
  return 0;
}

}  // namespace

Subcommand add_batch(CLI::App& app) {
  CLI::App* s = app.add_subcommand("batch", "run an OpenAI Batch file (JSONL) through the engine for throughput; resumable (docs/server.md)");
  s->add_option("-m,--model", f.model, "model: GGUF, llama2.c .bin, a Hugging Face folder, or synthetic[:TYPE], the bench model")->required();
  s->add_option("input", f.input, "requests, one a line: {custom_id, method, url, body}")->required();
  s->add_option("-o,--output", f.output, "answers, one a line; an existing file is resumed")->required();
  s->add_option("-z,--tokenizer", f.tokenizer, "llama2.c tokenizer.bin (default: the model's own)");
  s->add_option("--chat-template", f.chat_template_file, "a Jinja chat template file for chat lines (default: the model's own)");
  s->add_option("--served-model-name", f.served_model_name, "the model's name in the answers (default: the file's name)");
  s->add_option("--max-in-flight", f.in_flight, "requests submitted at once (default: 2 x --max-num-seqs, at least 8)")->check(CLI::Range(1, 1 << 16));
  s->add_option("--max-n", f.limits.max_n, "most choices one request may ask for (default 16)")->check(CLI::Range(1, 1024));
  s->add_option("--max-tokens-limit", f.limits.max_tokens, "most tokens one request may generate (default 0: the context length)")
      ->check(CLI::Range(0, 1 << 24));
  f.model_flags.add(*s);
  f.engine.add(*s);
  return {s, batch_main};
}

}  // namespace tessera::cli
