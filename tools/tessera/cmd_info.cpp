// tessera info: what a model file holds, on one screen: format, architecture
// and shapes, parameters, tensor types and bytes, tokenizer, context, and
// every metadata key Tessera does not interpret.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include "engine/formats/gguf.h"
#include "engine/models/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/tessera/cli_common.h"

namespace tessera::cli {

namespace {

struct InfoFlags {
  std::string model, tokenizer;
} f;

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b < 10 * 1024) std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)b);
  else if (b < 10ull << 20) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else if (b < 10ull << 30) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  return buf;
}

// 1234567 → "1,234,567".
std::string grouped(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

// "blk.7.attn_q.weight" → "blk.N.attn_q.weight": one line per role, not per layer.
std::string role(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return name;
  const size_t dot = name.find('.', 4);
  return dot == std::string::npos ? name : "blk.N" + name.substr(dot);
}

std::string token_label(const TokenizerData& d, int32_t id) {
  if (id < 0 || (size_t)id >= d.tokens.size()) return "none";
  return std::to_string(id) + " '" + d.tokens[(size_t)id] + "'";
}

void print_tokenizer(const std::string& source, Expected<Tokenizer> tok) {
  if (!tok) {
    std::printf("tokenizer  not usable: %s\n", tok.status().message().c_str());
    return;
  }
  const TokenizerData& d = tok->data();
  std::printf("tokenizer  %s, %s tokens, from %s\n", tok->description().c_str(), grouped((uint64_t)tok->vocab_size()).c_str(),
              source.c_str());
  std::printf("           bos %s, eos %s, unk %s, pad %s; add_bos %s, add_eos %s%s\n", token_label(d, d.bos_id).c_str(),
              token_label(d, d.eos_id).c_str(), token_label(d, d.unk_id).c_str(), token_label(d, d.pad_id).c_str(),
              d.add_bos ? "yes" : "no", d.add_eos ? "yes" : "no",
              tok->algorithm() == TokenizerAlgorithm::byte_bpe ? "" : d.add_space_prefix ? ", space prefix" : ", no space prefix");
  std::map<TokenType, int> types;
  for (TokenType t : d.types) ++types[t];
  static const char* names[] = {"undefined", "normal", "unknown", "control", "user-defined", "unused", "byte"};
  std::string line;
  for (const auto& [t, n] : types) {
    if (!line.empty()) line += ", ";
    line += grouped((uint64_t)n) + " " + names[(int)t];
  }
  std::printf("           token types: %s\n", line.c_str());
}

int info_main() {
  auto weights = load_model(f.model);
  if (!weights) return fail(weights.status());
  const ModelWeights& m = *weights;
  const LlamaConfig& c = m.config;

  std::string container = m.format;
  if (m.format == "gguf") {
    auto g = GgufFile::open(f.model);
    if (g)
      container = "GGUF v" + std::to_string(g->version()) + ", alignment " + std::to_string(g->alignment()) + ", " +
                  std::to_string(g->kvs().size()) + " metadata keys";
  } else if (m.format == "llama2c") {
    container = "llama2.c checkpoint";
  }
  std::printf("model      %s (%s)\n", f.model.c_str(), container.c_str());
  std::printf("arch       llama: dim %d, ffn %d, %d layers, %d heads, %d KV heads, head_dim %d, vocab %s\n", c.dim,
              c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim(), grouped((uint64_t)c.vocab_size).c_str());
  std::printf("context    %d tokens\n", c.context_length);
  std::printf("rope       %d of %d dims per head, theta %g, %s pairs; rms_norm eps %g; output %s\n", c.rope_dims, c.head_dim(),
              c.rope_theta, c.rope_layout == RopeLayout::interleaved ? "interleaved" : "half-split", c.rms_eps,
              c.tied_embeddings ? "tied to token_embd" : "separate (output.weight)");

  uint64_t params = 0, bytes = 0;
  std::map<std::string, std::pair<int, uint64_t>> by_type;  // dtype → tensors, bytes
  struct Role {
    std::string shape, dtype;
    int count = 0;
  };
  std::vector<std::pair<std::string, Role>> roles;
  for (const WeightTensor& t : m.tensors) {
    params += (uint64_t)t.desc.shape.numel();
    bytes += t.data.size();
    auto& bt = by_type[std::string(name(t.desc.dtype))];
    ++bt.first;
    bt.second += t.data.size();
    const std::string r = role(t.name);
    auto it = std::find_if(roles.begin(), roles.end(), [&](const auto& x) { return x.first == r; });
    if (it == roles.end()) roles.push_back({r, {t.desc.shape.to_string(), std::string(name(t.desc.dtype)), 1}});
    else ++it->second.count;
  }
  std::printf("params     %s in %zu tensors, %s\n", grouped(params).c_str(), m.tensors.size(), human_bytes(bytes).c_str());
  std::string types;
  for (const auto& [t, nb] : by_type) {
    if (!types.empty()) types += ", ";
    types += t + " " + std::to_string(nb.first) + " (" + human_bytes(nb.second) + ")";
  }
  std::printf("types      %s\n", types.c_str());
  for (const auto& [r, x] : roles)
    std::printf("           %-28s %-14s %-5s%s\n", r.c_str(), x.shape.c_str(), x.dtype.c_str(),
                x.count > 1 ? (" x" + std::to_string(x.count)).c_str() : "");

  if (!f.tokenizer.empty()) print_tokenizer(f.tokenizer, Tokenizer::load_file(f.tokenizer, c.vocab_size));
  else if (m.tokenizer) print_tokenizer(f.model, Tokenizer::from_data(*m.tokenizer, f.model));
  else std::printf("tokenizer  none in the file (give one with -z)\n");

  if (!m.metadata.empty()) {
    std::printf("metadata   %zu key%s Tessera does not interpret:\n", m.metadata.size(), m.metadata.size() == 1 ? "" : "s");
    for (const auto& [k, v] : m.metadata) std::printf("           %s = %s\n", k.c_str(), v.c_str());
  }
  return 0;
}

}  // namespace

Subcommand add_info(CLI::App& app) {
  CLI::App* s = app.add_subcommand("info", "describe a model file");
  s->add_option("-m,--model", f.model, "model file (GGUF or llama2.c .bin)")->required();
  s->add_option("-z,--tokenizer", f.tokenizer, "tokenizer file to describe instead of the model's own");
  return {s, info_main};
}

}  // namespace tessera::cli
