// Greedy generation through the public API: the program docs/api.md shows.
#include <cstdio>
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: %s MODEL\n", argv[0]), 2;
  auto model = tessera::Model::open({.path = argv[1]});
  if (!model) return std::fprintf(stderr, "%s\n", model.status().message().c_str()), 1;
  auto gen = (*model)->start({.temperature = 0.0f});
  if (!gen) return std::fprintf(stderr, "%s\n", gen.status().message().c_str()), 1;
  const int32_t prompt[] = {1, 277, 51, 190};  // BOS, then the prompt's token ids
  auto ids = (*gen)->generate(prompt, 32);      // 32 forward passes, prompt included
  if (!ids) return std::fprintf(stderr, "%s\n", ids.status().message().c_str()), 1;
  for (int32_t id : *ids) std::printf("%d ", id);
  const auto& m = (*gen)->metrics();
  std::printf("\nTTFT %.2f ms, %.1f tok/s on %s\n", m.ttft_ms, m.decode_tok_s(), (*model)->device().name.c_str());
  return ids->size() == 33 ? 0 : 1;
}
