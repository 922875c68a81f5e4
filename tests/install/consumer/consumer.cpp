// A program outside the tree, built against an installed Tessera (by
// find_package in CMakeLists.txt here, or by pkg-config): prints the model's
// shape as the public API reads it, then greedy ids, for install_test.sh to
// compare with the file's own header and run.c's reference; then every
// prompt again through the serving engine, submitted together and streamed
// from a thread each.
//   consumer MODEL STEPS PROMPT_IDS [PROMPT_IDS...]   PROMPT_IDS: "1" or "1,277,51"
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <thread>

#include <tessera/bench.h>
#include <tessera/engine.h>
#include <tessera/ir.h>
#include <tessera/model_file.h>
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  if (argc < 4) return std::fprintf(stderr, "usage: %s MODEL STEPS PROMPT_IDS\n", argv[0]), 2;
  auto file = tessera::inspect_model(argv[1]);
  if (!file) return std::fprintf(stderr, "%s\n", file.status().message().c_str()), 1;
  const tessera::ModelConfig& c = file->config;
  std::printf("config %s dim=%d ffn=%d layers=%d heads=%d kv_heads=%d vocab=%d context=%d\n", c.architecture.c_str(),
              c.embedding_dim, c.ffn_dim, c.layers, c.heads, c.kv_heads, c.vocab_size, c.context_length);

  std::vector<std::vector<int32_t>> prompts;
  for (int a = 3; a < argc; ++a) {
    std::vector<int32_t> p;
    const std::string ids_text = argv[a];
    for (size_t start = 0; start <= ids_text.size();) {
      size_t end = ids_text.find(',', start);
      if (end == std::string::npos) end = ids_text.size();
      p.push_back((int32_t)std::atoi(ids_text.substr(start, end - start).c_str()));
      start = end + 1;
    }
    prompts.push_back(p);
  }
  const std::vector<int32_t>& prompt = prompts[0];
  auto model = tessera::Model::open({.path = argv[1]});
  if (!model) return std::fprintf(stderr, "%s\n", model.status().message().c_str()), 1;
  auto gen = (*model)->start({.temperature = 0.0f});
  if (!gen) return std::fprintf(stderr, "%s\n", gen.status().message().c_str()), 1;
  auto ids = (*gen)->generate(prompt, std::atoi(argv[2]));
  if (!ids) return std::fprintf(stderr, "%s\n", ids.status().message().c_str()), 1;
  std::string line;
  for (size_t i = 0; i < ids->size(); ++i) line += (i ? "," : "") + std::to_string((*ids)[i]);
  std::printf("ids %s\n", line.c_str());
  std::printf("device %s, %zu passes known\n", (*model)->device().name.c_str(), tessera::list_passes().size());

  // The engine: every prompt at once, each streamed by a thread of its own.
  const int steps = std::atoi(argv[2]);
  auto engine = tessera::Engine::open({.model = {.path = argv[1]}, .max_num_seqs = (int32_t)prompts.size()});
  if (!engine) return std::fprintf(stderr, "%s\n", engine.status().message().c_str()), 1;
  std::vector<std::shared_ptr<tessera::RequestHandle>> handles;
  for (const auto& p : prompts) {
    tessera::Request q;
    q.prompt = p;
    q.max_tokens = steps - (int32_t)p.size() + 1;  // -n STEPS forward passes, as run.c counts
    q.sampling.temperature = 0;
    q.stop_token_ids = {1};
    q.ignore_eos = true;
    auto h = (*engine)->submit(q, tessera::Engine::stream);
    if (!h) return std::fprintf(stderr, "%s\n", h.status().message().c_str()), 1;
    handles.push_back(*h);
  }
  std::vector<std::vector<int32_t>> streamed(prompts.size());
  std::vector<std::thread> readers;
  for (size_t i = 0; i < prompts.size(); ++i)
    readers.emplace_back([&, i] {
      streamed[i] = prompts[i];
      for (tessera::TokenOutput t; handles[i]->next(&t);)
        if (t.token >= 0) streamed[i].push_back(t.token);
    });
  for (auto& r : readers) r.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::string l;
    for (size_t k = 0; k < streamed[i].size(); ++k) l += (k ? "," : "") + std::to_string(streamed[i][k]);
    std::printf("engine %zu %s\n", i, l.c_str());
  }
  std::printf("engine finished %lld requests\n", (long long)(*engine)->metrics().requests_finished);
  return 0;
}
