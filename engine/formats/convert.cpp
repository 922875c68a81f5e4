#include "engine/formats/convert.h"

#include <cstring>
#include <filesystem>

#include "core/half.h"
#include "core/quant.h"
#include "engine/formats/gguf_arch_keys.h"
#include "engine/formats/gguf_writer.h"
#include "engine/models/gguf_model_loader.h"

namespace tessera {

namespace {
std::string file_stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

// One row of `n` elements converted from `from` to `to` through f32.
void convert_row(DType from, const std::byte* src, DType to, std::byte* dst, int64_t n, std::vector<float>& scratch) {
  scratch.resize((size_t)n);
  dequantize_row(from, src, scratch.data(), n);
  if (to == DType::f32) {
    std::memcpy(dst, scratch.data(), (size_t)n * sizeof(float));
  } else if (to == DType::f16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = f32_to_f16(scratch[(size_t)i]);
      std::memcpy(dst + i * 2, &h, 2);
    }
  } else {
    quantize_row(to, scratch.data(), dst, n);
  }
}

std::vector<std::byte> convert_tensor(const WeightTensor& t, DType to) {
  const TensorDesc out = TensorDesc::contiguous(to, t.desc.shape);
  std::vector<std::byte> bytes((size_t)out.bytes());
  const int64_t rows = t.desc.rows(), n = t.desc.shape.last();
  const int64_t in_row = t.desc.row_bytes(), out_row = out.row_bytes();
  std::vector<float> scratch;
  for (int64_t r = 0; r < rows; ++r) convert_row(t.desc.dtype, t.data.data() + r * in_row, to, bytes.data() + r * out_row, n, scratch);
  return bytes;
}

// HF half-split RoPE rows → GGUF's adjacent pairs: within each head, row
// 2i+j takes old row j*head_dim/2 + i (llama.cpp's converter permute).
std::vector<std::byte> interleave_rope_rows(std::span<const std::byte> src, int64_t rows, int64_t row_bytes,
                                            int64_t head_dim) {
  std::vector<std::byte> out(src.size());
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t h = r / head_dim, k = r % head_dim, i = k / 2, j = k % 2;
    const int64_t old = h * head_dim + j * half + i;
    std::memcpy(out.data() + r * row_bytes, src.data() + old * row_bytes, (size_t)row_bytes);
  }
  return out;
}

// The written file, loaded as `tessera run` would load it, must give the
// model's config (but the RoPE order the rows were permuted to): a switch
// the keys could not state would make it compute another model. Removed if not.
Status check_reads_back(const ModelWeights& m, const std::string& path, bool permuted) {
  auto back = load_gguf_model(path);
  std::string diff;
  if (back) {
    TransformerConfig want = m.config;
    if (permuted) want.rope_layout = back->config.rope_layout;
    diff = first_difference(back->config, want);
  }
  if (back && diff.empty()) return Status::ok();
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (!back) return back.status();
  return unsupported(m.source + ": the GGUF written would read back with another " + std::string(name(m.config.arch)) +
                     " config (" + diff + ", read back vs the model's), so " + path + " was removed");
}

bool is_qk(const std::string& name) {
  const auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
  return ends(".attn_q.weight") || ends(".attn_k.weight");
}

void write_tokenizer(GgufWriter& w, const TokenizerData& t) {
  w.set_string("tokenizer.ggml.model", t.model);
  if (!t.pre.empty()) w.set_string("tokenizer.ggml.pre", t.pre);
  w.set_string_array("tokenizer.ggml.tokens", t.tokens);
  // Byte-level BPE merges by rank; llama.cpp's converter writes no scores for it.
  if (t.model != "gpt2") w.set_f32_array("tokenizer.ggml.scores", t.scores);
  std::vector<int32_t> types;
  for (TokenType x : t.types) types.push_back((int32_t)x);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  if (!t.merges.empty()) w.set_string_array("tokenizer.ggml.merges", t.merges);
  if (t.bos_id >= 0) w.set_u32("tokenizer.ggml.bos_token_id", (uint32_t)t.bos_id);
  if (t.eos_id >= 0) w.set_u32("tokenizer.ggml.eos_token_id", (uint32_t)t.eos_id);
  if (t.unk_id >= 0) w.set_u32("tokenizer.ggml.unknown_token_id", (uint32_t)t.unk_id);
  if (t.pad_id >= 0) w.set_u32("tokenizer.ggml.padding_token_id", (uint32_t)t.pad_id);
  w.set_bool("tokenizer.ggml.add_bos_token", t.add_bos);
  w.set_bool("tokenizer.ggml.add_eos_token", t.add_eos);
  if (t.model == "llama" && !t.add_space_prefix) w.set_bool("tokenizer.ggml.add_space_prefix", false);
}
}  // namespace

bool can_write_weight_type(DType t) {
  if (t == DType::i8 || t == DType::i32) return false;
  // core/quant says which types it can quantize: one block of zeros answers for all.
  const uint32_t n = traits(t).block_elems;
  std::vector<float> zeros(n, 0.0f);
  std::vector<std::byte> block(traits(t).block_bytes);
  return quantize_row(t, zeros.data(), block.data(), n);
}

std::string writable_weight_types() {
  std::string s;
  for (int i = 0; i < kDTypeCount; ++i)
    if (can_write_weight_type((DType)i)) s += (s.empty() ? "" : ", ") + std::string(name((DType)i));
  return s;
}

Status write_model_gguf(const ModelWeights& m, const TokenizerData* tok, DType type, const std::string& out_path,
                        std::vector<std::string>* notes) {
  if (!can_write_weight_type(type))
    return unsupported(out_path + ": weight type " + std::string(name(type)) + " cannot be written (no quantizer); expected " +
                       writable_weight_types());
  return write_model_gguf(m, tok, pure_file_type(type), /*pure=*/true, out_path, notes);
}

Status write_model_gguf(const ModelWeights& m, const TokenizerData* tok, const QuantFileType& ft, bool pure,
                        const std::string& out_path, std::vector<std::string>* notes) {
  TS_TRY(m.config.validate(m.source));
  const bool scores_ok = tok && (tok->scores.size() == tok->tokens.size() || (tok->model == "gpt2" && tok->scores.empty()));
  if (tok && (!scores_ok || tok->types.size() != tok->tokens.size()))
    return invalid_argument(m.source + ": tokenizer has " + std::to_string(tok->tokens.size()) + " tokens, " +
                            std::to_string(tok->scores.size()) + " scores and " + std::to_string(tok->types.size()) +
                            " types; expected equal counts");
  // GGUF keeps llama's Q/K rows in interleaved pairs and every other architecture's half-split (NeoX).
  const RopeLayout gguf_layout = m.config.arch == Arch::llama ? RopeLayout::interleaved : RopeLayout::half_split;
  const bool permute = m.config.rope_layout != gguf_layout;
  if (permute && (gguf_layout != RopeLayout::interleaved || m.config.rope_dims != m.config.head_dim()))
    return unsupported(m.source + ": " + std::string(name(m.config.arch)) + " Q/K rows in " +
                       (m.config.rope_layout == RopeLayout::half_split ? "half-split" : "interleaved") + " RoPE order over " +
                       std::to_string(m.config.rope_dims) + " of " + std::to_string(m.config.head_dim()) +
                       " head dims cannot be written in GGUF's order for it");
  auto note = [&](std::string s) { if (notes) notes->push_back(std::move(s)); };

  std::vector<const WeightTensor*> written;
  std::vector<TensorToWrite> plan;
  for (const WeightTensor& t : m.tensors) {
    if (m.config.tied_embeddings && t.name == "output.weight") continue;
    written.push_back(&t);
    plan.push_back({t.name, t.desc.shape});
  }
  const std::vector<DType> types = choose_tensor_types(ft, plan, {m.config.n_layers, pure}, notes);

  GgufWriter w;
  const auto model_name = m.metadata.find("general.name");
  w.set_string("general.architecture", std::string(name(m.config.arch)));
  w.set_string("general.name", model_name != m.metadata.end() ? model_name->second : file_stem(m.source));
  w.set_u32("general.alignment", kGgufDefaultAlignment);
  w.set_u32("general.file_type", ft.llama_ftype);
  TS_TRY(write_arch_keys(w, m.config, m.source));
  if (tok) write_tokenizer(w, *tok);
  if (!m.chat_template.empty()) w.set_string("tokenizer.chat_template", m.chat_template);
  for (size_t i = 0; i < written.size(); ++i) {
    const WeightTensor& t = *written[i];
    const DType from = t.desc.dtype;
    // Integer tensors keep their type; the rest take the plan's (norms f32).
    const DType to = from == DType::i8 || from == DType::i32 ? from : types[i];
    std::vector<std::byte> bytes;
    if (to != from) bytes = convert_tensor(t, to);
    if (permute && is_qk(t.name)) {
      const std::span<const std::byte> src = to != from ? std::span<const std::byte>(bytes) : t.data;
      const int64_t row_bytes = (int64_t)bytes_for(to, t.desc.shape.last());
      bytes = interleave_rope_rows(src, t.desc.rows(), row_bytes, m.config.head_dim());
      note("tensor '" + t.name + "': rows permuted from half-split to interleaved RoPE order");
      TS_TRY(w.add_tensor(t.name, to, t.desc.shape, std::move(bytes)));
    } else if (to != from) {
      TS_TRY(w.add_tensor(t.name, to, t.desc.shape, std::move(bytes)));
    } else {
      TS_TRY(w.add_tensor(t.name, to, t.desc.shape, t.data));
    }
  }
  TS_TRY(w.write(out_path));
  return check_reads_back(m, out_path, permute);
}

}  // namespace tessera
