// tessera run: generate from one prompt (as llama2.c's run does) or from
// many at once (--prompt-ids-file, --prompts-file), through the serving
// engine: every prompt is submitted together and runs concurrently.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <random>

#include <tessera/engine.h>
#include "tools/tessera/cli_common.h"
#include "tools/tessera/engine_flags.h"

namespace tessera::cli {

namespace {

struct RunFlags {
  std::string model, tokenizer, prompt, prompt_ids, prompt_ids_file, prompts_file, logits_out;
  ModelFlags model_flags;
  EngineFlags engine;
  int32_t steps = 256;
  float temperature = 1.0f, top_p = 0.9f;
  int32_t top_k = 0;
  int64_t seed = -1;
  bool print_ids = false;
} f;

// One prompt a line of `path`: comma-separated ids, or text to encode.
Expected<std::vector<std::vector<int32_t>>> read_prompts(const std::string& path, bool ids, Engine& e) {
  std::ifstream in(path);
  if (!in) return io_error(path + ": cannot open");
  std::vector<std::vector<int32_t>> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = path + ":" + std::to_string(n);
    auto p = ids ? parse_id_list(where, line) : e.encode(line);
    if (!p) return p.status().with_context(ids ? "" : where);
    out.push_back(std::move(*p));
  }
  if (out.empty()) return invalid_argument(path + ": holds no prompt (one a line)");
  return out;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += (char)c;
    } else if (c == '\n') {
      o += "\\n";
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += (char)c;
    }
  }
  return o + "\"";
}

std::string join(const std::vector<int32_t>& ids) {
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) line += (i ? "," : "") + std::to_string(ids[i]);
  return line;
}

// --logits-out: the one prompt through a Generation (one sequence, every
// row's logits kept), writing the f32 logits of every position computed:
// the prompt's rows, then one per generated token fed back (the last
// token's are not computed), row-major, vocabulary-wide; the layout of
// ../shared/reference/zoo/*.logits.f32. Prints what run prints.
int run_with_logits_out(const ModelOptions& mo, const SamplerParams& sp) {
  if (!f.prompt_ids_file.empty() || !f.prompts_file.empty())
    return fail(invalid_argument("--logits-out: takes one prompt (-p or --prompt-ids), not a prompts file"));
  auto opened = Model::open(mo);
  if (!opened) return fail(opened.status());
  Model& model = **opened;
  for (const auto& note : model.placement_notes()) std::fprintf(stderr, "tessera: %s\n", note.c_str());
  auto parsed = !f.prompt_ids.empty() ? parse_id_list("--prompt-ids", f.prompt_ids) : model.encode(f.prompt);
  if (!parsed) return fail(parsed.status().with_context(f.prompt_ids.empty() ? "-p" : ""));
  const std::vector<int32_t>& prompt = *parsed;
  const int32_t ctx = model.max_context(), vocab = model.config().vocab_size;
  if (prompt.empty()) return fail(invalid_argument("prompt: must hold at least one token"));
  for (size_t k = 0; k < prompt.size(); ++k)
    if (prompt[k] < 0 || prompt[k] >= vocab)
      return fail(out_of_range("--prompt-ids: token id " + std::to_string(prompt[k]) + " (element " + std::to_string(k) +
                               ") is outside the vocabulary [0, " + std::to_string(vocab) + ")"));
  if ((int64_t)prompt.size() > ctx)
    return fail(out_of_range("prompt: " + std::to_string(prompt.size()) + " tokens exceed the context length " + std::to_string(ctx)));
  if (!f.print_ids && !model.has_tokenizer())
    return fail(invalid_argument(f.model + ": has no tokenizer to print text; give one with -z or use --print-ids"));
  const int32_t steps = f.steps <= 0 || f.steps > ctx ? ctx : f.steps;
  const int32_t bos = model.bos_id();  // llama2.c stops at BOS, as run does without the flag
  std::FILE* out = std::fopen(f.logits_out.c_str(), "wb");
  if (!out) return fail(io_error("--logits-out " + f.logits_out + ": cannot open for writing"));
  auto gen = model.start(sp);
  if (!gen) { std::fclose(out); return fail(gen.status()); }
  bool write_ok = true;
  auto write_rows = [&](std::span<const float> rows) {
    write_ok = write_ok && std::fwrite(rows.data(), sizeof(float), rows.size(), out) == rows.size();
  };
  std::vector<int32_t> ids(prompt.begin(), prompt.begin() + std::min<int64_t>((int64_t)prompt.size(), steps));
  Status st = (*gen)->feed_all(ids);
  if (st.is_ok()) write_rows((*gen)->all_logits());
  // -n counts forward passes, prompt included (as run does without the
  // flag): the prompt's last pass and each fed token's give one token each,
  // steps - P + 1 in all; the last one is not fed, so it has no logits row.
  const int32_t to_sample = steps - (int32_t)ids.size() + 1;
  for (int32_t i = 0; st.is_ok() && i < to_sample && ids.size() == prompt.size() + (size_t)i; ++i) {
    const int32_t next = (*gen)->sample();
    ids.push_back(next);
    if (next == bos || i + 1 == to_sample) break;  // llama2.c stops at BOS
    st = (*gen)->feed(std::span<const int32_t>(&ids.back(), 1));
    if (st.is_ok()) write_rows((*gen)->logits());
  }
  if (std::fclose(out) != 0) write_ok = false;
  if (!st.is_ok()) return fail(st);
  if (!write_ok) return fail(io_error("--logits-out " + f.logits_out + ": write failed"));
  if (f.print_ids) {
    std::printf("%s\n", join(ids).c_str());
  } else {
    auto text = model.decode(ids);
    if (!text) return fail(text.status());
    std::printf("%s\n", text->c_str());
  }
  return 0;
}

int run_main() {
  SamplerParams sp;
  sp.temperature = f.temperature;
  sp.top_p = f.top_p;
  sp.top_k = f.top_k;
  sp.seed = f.seed >= 0 ? (uint64_t)f.seed : std::random_device{}();
  if (Status s = validate(sp); !s.is_ok()) return fail(s);
  if (!f.logits_out.empty()) return run_with_logits_out(f.model_flags.options(f.model, f.tokenizer), sp);
  const bool many = !f.prompt_ids_file.empty() || !f.prompts_file.empty();
  EngineOptions eo = f.engine.options(f.model_flags.options(f.model, f.tokenizer));
  // One prompt needs one sequence; a file's prompts all run at once up to
  // --max-num-seqs (default: as many as the file holds, at most 64).
  if (!many && !f.engine.max_num_seqs_given) eo.max_num_seqs = 1;
  std::vector<std::vector<int32_t>> prompts;
  if (many && !f.engine.max_num_seqs_given) {
    // The file is read before the engine opens only to count its lines.
    std::ifstream in(!f.prompt_ids_file.empty() ? f.prompt_ids_file : f.prompts_file);
    int32_t lines = 0;
    for (std::string l; std::getline(in, l);) ++lines;
    eo.max_num_seqs = std::clamp(lines, 1, 64);
    eo.max_num_batched_tokens = std::max(eo.max_num_batched_tokens, eo.max_num_seqs);
  }
  auto opened = Engine::open(eo);
  if (!opened) return fail(opened.status());
  Engine& e = **opened;
  for (const auto& note : e.placement_notes()) std::fprintf(stderr, "tessera: %s\n", note.c_str());

  if (!f.prompt_ids_file.empty() || !f.prompts_file.empty()) {
    auto p = read_prompts(!f.prompt_ids_file.empty() ? f.prompt_ids_file : f.prompts_file, !f.prompt_ids_file.empty(), e);
    if (!p) return fail(p.status());
    prompts = std::move(*p);
  } else if (!f.prompt_ids.empty()) {
    auto ids = parse_id_list("--prompt-ids", f.prompt_ids);
    if (!ids) return fail(ids.status());
    prompts.push_back(std::move(*ids));
  } else {
    auto ids = e.encode(f.prompt);
    if (!ids) return fail(ids.status().with_context("-p"));
    prompts.push_back(std::move(*ids));
  }
  const int32_t ctx = e.max_context();
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string where = many ? "prompt " + std::to_string(i + 1) + ": " : "";
    const std::string flag = !f.prompt_ids.empty() ? "--prompt-ids" : !f.prompt_ids_file.empty() ? f.prompt_ids_file : "prompt";
    const auto& p = prompts[i];
    if (p.empty()) return fail(invalid_argument(where + "prompt: must hold at least one token"));
    for (size_t k = 0; k < p.size(); ++k)
      if (p[k] < 0 || p[k] >= e.config().vocab_size)
        return fail(out_of_range(where + flag + ": token id " + std::to_string(p[k]) + " (element " + std::to_string(k) +
                                 ") is outside the vocabulary [0, " + std::to_string(e.config().vocab_size) + ")"));
    if ((int64_t)p.size() > ctx)
      return fail(out_of_range(where + "prompt: " + std::to_string(p.size()) + " tokens exceed the context length " + std::to_string(ctx)));
  }
  const bool want_text = !f.print_ids;
  if (want_text && !e.has_tokenizer())
    return fail(invalid_argument(f.model + ": has no tokenizer to print text; give one with -z or use --print-ids"));
  int32_t steps = f.steps;
  if (steps <= 0 || steps > ctx) {
    // llama2.c's rule: 0 or too many steps means the whole context.
    std::fprintf(stderr, "tessera: -n %d: using the context length %d\n", steps, ctx);
    steps = ctx;
  }

  std::fprintf(stderr, "tessera: %s\n", e.memory_summary().c_str());

  // -n counts forward passes, prompt included: a prompt of P tokens leaves
  // steps - P + 1 tokens to sample; one longer than -n is cut after -n
  // tokens plus one, as llama2.c prints it. llama2.c stops at BOS, not EOS.
  std::vector<std::shared_ptr<RequestHandle>> handles(prompts.size());
  std::vector<std::vector<int32_t>> shown(prompts.size());
  int32_t prev = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    const std::string where = many ? "prompt " + std::to_string(i + 1) + ": " : "";
    if ((int64_t)p.size() > steps) {
      shown[i].assign(p.begin(), p.begin() + std::min<int64_t>((int64_t)p.size(), steps + 1));
      continue;
    }
    Request q;
    q.prompt = p;
    q.max_tokens = steps - (int32_t)p.size() + 1;
    q.sampling = sp;
    q.stop_token_ids = {e.bos_id()};
    q.ignore_eos = true;
    q.detokenize = false;  // the CLI prints llama2.c's pieces itself
    shown[i] = p;
    if (!many && want_text) {
      // Stream: the prompt's pieces first, as run.c prints them, then each token.
      for (size_t k = 1; k < p.size(); ++k)
        if (auto piece = e.decode({p[k - 1], p[k]})) std::fputs(piece->c_str(), stdout);
      std::fflush(stdout);
      prev = p.back();
      auto h = e.submit(q, [&](const TokenOutput& t) {
        if (t.token < 0) return;
        if (auto piece = e.decode({prev, t.token})) std::fputs(piece->c_str(), stdout);
        std::fflush(stdout);
        prev = t.token;
      });
      if (!h) return fail(h.status().with_context(where));
      handles[i] = *h;
    } else {
      auto h = e.submit(q);
      if (!h) return fail(h.status().with_context(many ? where : ""));
      handles[i] = *h;
    }
  }
  int64_t prompt_tokens = 0, generated = 0;
  double ttft_sum = 0, e2e_max = 0;
  std::vector<double> itl;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (handles[i]) {
      const RequestResult& r = handles[i]->wait();
      const SequenceResult& s = r.sequences[0];
      if (s.finish == FinishReason::error) return fail(internal_error((many ? "prompt " + std::to_string(i + 1) + ": " : "") + s.error));
      shown[i].insert(shown[i].end(), s.tokens.begin(), s.tokens.end());
      prompt_tokens += r.metrics.prompt_tokens;
      generated += r.metrics.generated_tokens;
      ttft_sum += r.metrics.ttft_ms;
      e2e_max = std::max(e2e_max, r.metrics.e2e_ms);
      itl.insert(itl.end(), r.metrics.itl_ms.begin(), r.metrics.itl_ms.end());
    }
    if (f.print_ids) {
      std::printf("%s\n", join(shown[i]).c_str());
    } else if (many) {
      auto text = e.decode(shown[i]);
      std::printf("%s\n", json_string(text ? *text : "").c_str());
    }
  }
  if (!many && want_text) {
    if (!handles[0]) {  // -n ended inside the prompt: its pieces up to there
      for (size_t k = 1; k < shown[0].size(); ++k)
        if (auto piece = e.decode({shown[0][k - 1], shown[0][k]})) std::fputs(piece->c_str(), stdout);
    }
    std::printf("\n");
  }
  double itl_mean = 0;
  for (double g : itl) itl_mean += g / (double)itl.size();
  const size_t n_req = std::count_if(handles.begin(), handles.end(), [](const auto& h) { return h != nullptr; });
  std::fprintf(stderr,
               "tessera: %zu request%s, %lld prompt tokens, %lld generated in %.1f ms (%.1f tok/s aggregate; mean TTFT %.2f ms, "
               "TPOT %.2f ms) on %s\n",
               n_req, n_req == 1 ? "" : "s", (long long)prompt_tokens, (long long)generated, e2e_max,
               e2e_max > 0 ? (double)generated * 1e3 / e2e_max : 0.0, n_req ? ttft_sum / (double)n_req : 0.0, itl_mean,
               e.device().name.c_str());
  return 0;
}

}  // namespace

Subcommand add_run(CLI::App& app) {
  CLI::App* s = app.add_subcommand("run", "generate from a prompt, or from many at once");
  s->add_option("-m,--model", f.model, "model: GGUF, llama2.c .bin, a Hugging Face folder, or synthetic[:TYPE], the bench model")->required();
  s->add_option("-z,--tokenizer", f.tokenizer, "llama2.c tokenizer.bin (default: the model's own)");
  auto* p = s->add_option("-p,--prompt", f.prompt, "prompt text");
  auto* ids = s->add_option("--prompt-ids", f.prompt_ids, "prompt as comma-separated token ids (BOS included)");
  auto* idf = s->add_option("--prompt-ids-file", f.prompt_ids_file,
                            "prompts, one a line as comma-separated ids, run concurrently; prints one line per prompt in order");
  auto* tf = s->add_option("--prompts-file", f.prompts_file,
                           "text prompts, one a line, run concurrently; prints one JSON string (or --print-ids line) per prompt in order");
  for (auto* a : {p, ids, idf, tf})
    for (auto* b : {p, ids, idf, tf})
      if (a != b) a->excludes(b);
  s->add_option("-n,--steps", f.steps, "forward passes, prompt included (llama2.c's -n; 0 = context length)");
  s->add_option("--temp", f.temperature, "temperature (0 = greedy)");
  s->add_option("--top-p", f.top_p, "nucleus sampling threshold (1 = off)");
  s->add_option("--top-k", f.top_k, "keep the k most likely tokens (0 = off)");
  s->add_option("--seed", f.seed, "random seed (every prompt gets it)");
  f.model_flags.add(*s);
  f.engine.add(*s);
  s->add_option("--logits-out", f.logits_out,
                "write the f32 logits of every position computed (the prompt's, then each generated token's), "
                "row-major, vocabulary-wide, to FILE; one prompt");
  s->add_flag("--print-ids", f.print_ids, "print the whole id sequence on one line instead of text");
  return {s, run_main};
}

}  // namespace tessera::cli
