#include "engine/formats/quant_mix.h"

#include <algorithm>
#include <cctype>

namespace tessera {

namespace {

constexpr QuantFileType kFileTypes[] = {
    {"f32", 0, DType::f32},     {"f16", 1, DType::f16},     {"bf16", 32, DType::bf16},  {"q8_0", 7, DType::q8_0},
    {"q4_0", 2, DType::q4_0},   {"q4_1", 3, DType::q4_1},   {"q5_0", 8, DType::q5_0},   {"q5_1", 9, DType::q5_1},
    {"q4_K_S", 14, DType::q4_K}, {"q4_K_M", 15, DType::q4_K}, {"q5_K_S", 16, DType::q5_K}, {"q5_K_M", 17, DType::q5_K},
    {"q6_K", 18, DType::q6_K},
};

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower((unsigned char)x) == std::tolower((unsigned char)y);
         });
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

enum class Role { output, token_embd, attn_v, attn_k, attn_q, attn_output, ffn_up, ffn_gate, ffn_down, other };

// llama.cpp's tensor categories, by name; attn_qkv counts as attn_v (its
// V rows are what is sensitive).
Role role_of(const std::string& name) {
  if (name == "output.weight") return Role::output;
  if (name == "token_embd.weight") return Role::token_embd;
  if (contains(name, "attn_qkv.weight") || contains(name, "attn_v.weight")) return Role::attn_v;
  if (contains(name, "attn_k.weight")) return Role::attn_k;
  if (contains(name, "attn_q.weight")) return Role::attn_q;
  if (contains(name, "attn_output.weight")) return Role::attn_output;
  if (contains(name, "ffn_up")) return Role::ffn_up;
  if (contains(name, "ffn_gate")) return Role::ffn_gate;
  if (contains(name, "ffn_down")) return Role::ffn_down;
  return Role::other;
}

bool quantizable(const TensorToWrite& t) {
  return t.shape.rank >= 2 && t.name.size() >= 6 && t.name.compare(t.name.size() - 6, 6, "weight") == 0 &&
         !contains(t.name, "_norm.weight") && !contains(t.name, "ffn_gate_inp.weight");
}

// The first and last eighth of the layers, and every third between: where
// llama.cpp's K-quant mixes spend more bits.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// N of "blk.N.", or `fallback`.
int layer_of(const std::string& name, int fallback) {
  if (name.rfind("blk.", 0) != 0) return fallback;
  int n = 0;
  size_t i = 4;
  for (; i < name.size() && std::isdigit((unsigned char)name[i]) && n < 1000000; ++i) n = n * 10 + (name[i] - '0');
  return i > 4 && i < name.size() && name[i] == '.' ? n : fallback;
}

// llama.cpp's tensor_type_fallback: a type whose block does not divide the rows.
DType fit_rows(DType t, int64_t row) {
  if (row % traits(t).block_elems == 0) return t;
  DType f = t;
  switch (t) {
    case DType::q4_K: f = DType::q5_0; break;
    case DType::q5_K: f = DType::q5_1; break;
    case DType::q6_K: f = DType::q8_0; break;
    case DType::q2_K: case DType::q3_K: f = DType::q4_0; break;
    case DType::iq4_xs: f = DType::iq4_nl; break;
    default: break;
  }
  return row % traits(f).block_elems == 0 ? f : DType::f16;
}

}  // namespace

std::optional<QuantFileType> quant_file_type(std::string_view name) {
  for (const auto& f : kFileTypes)
    if (same_ignoring_case(f.name, name)) return f;
  return std::nullopt;
}

std::string quant_file_type_names() {
  std::string s;
  for (const auto& f : kFileTypes) s += (s.empty() ? "" : ", ") + std::string(f.name);
  return s;
}

QuantFileType pure_file_type(DType type) {
  // The file type of that name, or for q4_K / q5_K their _M (what
  // llama-quantize --pure Q4_K_M writes as general.file_type).
  for (const auto& f : kFileTypes)
    if (f.name == name(type)) return f;
  for (const auto& f : kFileTypes)
    if (f.base == type && f.name.back() == 'M') return f;
  return {name(type), 0, type};
}

std::vector<DType> choose_tensor_types(const QuantFileType& ft, const std::vector<TensorToWrite>& tensors,
                                       const QuantMixOptions& o, std::vector<std::string>* notes) {
  const bool tied = std::none_of(tensors.begin(), tensors.end(), [](const auto& t) { return t.name == "output.weight"; });
  const int n_attn_v = (int)std::count_if(tensors.begin(), tensors.end(), [](const auto& t) { return role_of(t.name) == Role::attn_v; });
  const bool quantized = traits(ft.base).quantized;
  const std::string_view n = ft.name;
  int i_attn_v = 0, i_ffn_down = 0;
  std::vector<DType> out;
  out.reserve(tensors.size());
  for (const TensorToWrite& t : tensors) {
    if (!quantizable(t)) {
      out.push_back(DType::f32);
      continue;
    }
    DType type = ft.base;
    if (quantized && !o.pure) {
      const Role role = role_of(t.name);
      if (role == Role::output || (tied && role == Role::token_embd)) {
        // The classifier: q6_K unless its rows are not whole 256-blocks of the base type (then q8_0).
        if (t.shape.last() % traits(type).block_elems != 0) type = DType::q8_0;
        else if (type != DType::q8_0) type = DType::q6_K;
      } else if (role == Role::attn_v) {
        const int i = n_attn_v == o.n_layers ? layer_of(t.name, i_attn_v) : i_attn_v;
        if ((n == "q4_K_M" || n == "q5_K_M") && use_more_bits(i, n_attn_v)) type = DType::q6_K;
        else if (n == "q4_K_S" && i < 4) type = DType::q5_K;
        ++i_attn_v;
      } else if (role == Role::ffn_down) {
        const int i_layer = layer_of(t.name, i_ffn_down), n_layer = o.n_layers;
        if ((n == "q4_K_M" || n == "q5_K_M") && use_more_bits(i_layer, n_layer)) type = DType::q6_K;
        else if (n == "q4_K_S" && i_layer < n_layer / 8) type = DType::q5_K;
        ++i_ffn_down;
      }
    }
    if (traits(type).quantized) {
      const DType fit = fit_rows(type, t.shape.last());
      if (fit != type && notes)
        notes->push_back("tensor '" + t.name + "': rows of " + std::to_string(t.shape.last()) +
                         " elements are not a whole number of " + std::string(name(type)) + " blocks (" +
                         std::to_string(traits(type).block_elems) + "); written as " + std::string(name(fit)));
      type = fit;
    }
    out.push_back(type);
  }
  return out;
}

}  // namespace tessera
