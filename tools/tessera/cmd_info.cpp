// tessera info: what a model file holds, on one screen: format, architecture
// and shapes, parameters, tensor types and bytes, tokenizer, context, and
// every metadata key Tessera does not interpret.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <algorithm>
#include <map>

#include <tessera/model_file.h>

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

// llama.cpp's llama_ftype, the name its quantizer was asked for.
std::string llama_file_type_name(const std::string& id) {
  static const std::map<std::string, std::string> kNames = {
      {"0", "F32"},     {"1", "F16"},     {"2", "Q4_0"},    {"3", "Q4_1"},     {"7", "Q8_0"},    {"8", "Q5_0"},
      {"9", "Q5_1"},    {"10", "Q2_K"},   {"11", "Q3_K_S"}, {"12", "Q3_K_M"},  {"13", "Q3_K_L"}, {"14", "Q4_K_S"},
      {"15", "Q4_K_M"}, {"16", "Q5_K_S"}, {"17", "Q5_K_M"}, {"18", "Q6_K"},    {"19", "IQ2_XXS"}, {"20", "IQ2_XS"},
      {"21", "Q2_K_S"}, {"22", "IQ3_XS"}, {"23", "IQ3_XXS"}, {"24", "IQ1_S"},  {"25", "IQ4_NL"}, {"26", "IQ3_S"},
      {"27", "IQ3_M"},  {"28", "IQ2_S"},  {"29", "IQ2_M"},  {"30", "IQ4_XS"},  {"31", "IQ1_M"},  {"32", "BF16"}};
  const auto it = kNames.find(id);
  return it != kNames.end() ? it->second : "unknown";
}

std::string token_label(const SpecialToken& t) { return t.id < 0 ? "none" : std::to_string(t.id) + " '" + t.text + "'"; }

// "[288, 64]", outermost first.
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void print_tokenizer(const Expected<std::unique_ptr<TextTokenizer>>& tok) {
  if (!tok) {
    std::printf("tokenizer  not usable: %s\n", tok.status().message().c_str());
    return;
  }
  const TokenizerInfo d = (*tok)->info();
  std::printf("tokenizer  %s, %s tokens, from %s\n", d.description.c_str(), grouped((uint64_t)d.vocab_size).c_str(),
              d.source.c_str());
  std::printf("           bos %s, eos %s, unk %s, pad %s; add_bos %s, add_eos %s%s\n", token_label(d.bos).c_str(),
              token_label(d.eos).c_str(), token_label(d.unk).c_str(), token_label(d.pad).c_str(), d.add_bos ? "yes" : "no",
              d.add_eos ? "yes" : "no", d.byte_level ? "" : d.add_space_prefix ? ", space prefix" : ", no space prefix");
  std::string line;
  for (const auto& [type, n] : d.token_types) {
    if (!line.empty()) line += ", ";
    line += grouped((uint64_t)n) + " " + type;
  }
  std::printf("           token types: %s\n", line.c_str());
}

int info_main() {
  auto inspected = inspect_model(f.model);
  if (!inspected) return fail(inspected.status());
  const ModelFileInfo& m = *inspected;
  const ModelConfig& c = m.config;

  std::printf("model      %s (%s)\n", f.model.c_str(), m.container.c_str());
  std::printf("arch       %s: dim %d, ffn %d, %d layers, %d heads, %d KV heads, head_dim %d, vocab %s\n", c.architecture.c_str(),
              c.embedding_dim, c.ffn_dim, c.layers, c.heads, c.kv_heads, c.head_dim, grouped((uint64_t)c.vocab_size).c_str());
  std::printf("context    %d tokens\n", c.context_length);
  std::printf("rope       %d of %d dims per head, theta %g, %s pairs; rms_norm eps %g; output %s\n", c.rope_dims, c.head_dim,
              c.rope_theta, c.rope_pairs.c_str(), c.norm_eps, c.tied_embeddings ? "tied to token_embd" : "separate (output.weight)");
  for (size_t i = 0; i < c.features.size(); ++i) std::printf("%s%s\n", i ? "           " : "features   ", c.features[i].c_str());

  // Bits per weight over every tensor, and per type: a Q4_K_M file is a mix
  // (q4_K with q6_K for some roles and layers), so each role lists the types
  // its layers hold.
  uint64_t params = 0, bytes = 0;
  std::map<std::string, std::pair<int, std::pair<uint64_t, uint64_t>>> by_type;  // dtype → tensors, (elements, bytes)
  struct Role {
    std::string shape;
    std::vector<std::pair<std::string, int>> dtypes;  // in first-seen order, with counts
    int count = 0;
  };
  std::vector<std::pair<std::string, Role>> roles;
  for (const TensorInfo& t : m.tensors) {
    params += t.elements;
    bytes += t.bytes;
    auto& bt = by_type[t.dtype];
    ++bt.first;
    bt.second.first += t.elements;
    bt.second.second += t.bytes;
    const std::string r = role(t.name);
    auto it = std::find_if(roles.begin(), roles.end(), [&](const auto& x) { return x.first == r; });
    if (it == roles.end()) it = roles.insert(roles.end(), {r, {shape_text(t.shape), {}, 0}});
    ++it->second.count;
    auto& dts = it->second.dtypes;
    auto dt = std::find_if(dts.begin(), dts.end(), [&](const auto& x) { return x.first == t.dtype; });
    if (dt == dts.end()) dts.push_back({t.dtype, 1});
    else ++dt->second;
  }
  auto bpw = [](uint64_t b, uint64_t n) { return n ? 8.0 * (double)b / (double)n : 0.0; };
  std::printf("params     %s in %zu tensors, %s, %.2f bits per weight\n", grouped(params).c_str(), m.tensors.size(),
              human_bytes(bytes).c_str(), bpw(bytes, params));
  std::string types;
  for (const auto& [t, nb] : by_type) {
    if (!types.empty()) types += ", ";
    char share[96];
    std::snprintf(share, sizeof share, " (%.1f%% of weights, %.2f bpw, ", params ? 100.0 * (double)nb.second.first / (double)params : 0.0,
                  bpw(nb.second.second, nb.second.first));
    types += t + " x" + std::to_string(nb.first) + share + human_bytes(nb.second.second) + ")";
  }
  std::printf("types      %s\n", types.c_str());
  const auto ft = std::find_if(m.metadata.begin(), m.metadata.end(), [](const auto& kv) { return kv.first == "general.file_type"; });
  if (ft != m.metadata.end())
    std::printf("file type  %s (general.file_type %s: the quantizer's target; the types above are what it chose)\n",
                llama_file_type_name(ft->second).c_str(), ft->second.c_str());
  for (const auto& [r, x] : roles) {
    std::string dt;
    for (const auto& [name, n] : x.dtypes)
      dt += (dt.empty() ? "" : ", ") + name + (x.dtypes.size() > 1 ? " x" + std::to_string(n) : "");
    std::printf("           %-28s %-14s %-5s%s\n", r.c_str(), x.shape.c_str(), dt.c_str(),
                x.count > 1 && x.dtypes.size() == 1 ? (" x" + std::to_string(x.count)).c_str() : "");
  }

  if (!f.tokenizer.empty() || m.has_tokenizer) print_tokenizer(TextTokenizer::open({f.model, f.tokenizer}));
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
  s->add_option("-m,--model", f.model, "model: GGUF, llama2.c .bin, or a Hugging Face folder")->required();
  s->add_option("-z,--tokenizer", f.tokenizer, "tokenizer file to describe instead of the model's own");
  return {s, info_main};
}

}  // namespace tessera::cli
