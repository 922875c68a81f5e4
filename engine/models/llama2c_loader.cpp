#include "engine/models/llama2c_loader.h"

#include <cstring>

#include "core/mapped_file.h"

namespace tessera {

namespace {
struct Header {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};
constexpr uint64_t kHeaderBytes = sizeof(Header);
static_assert(kHeaderBytes == 28);

// Upper bounds far above any llama2.c model, so that a corrupted header
// fails here instead of asking for absurd sizes.
struct Field {
  const char* name;
  int64_t value;
  int64_t max;
};

Status check_header(const std::string& path, const Header& h) {
  const int64_t vocab = h.vocab_size < 0 ? -(int64_t)h.vocab_size : (int64_t)h.vocab_size;
  const Field fields[] = {{"dim", h.dim, 1 << 16},           {"hidden_dim", h.hidden_dim, 1 << 18},
                          {"n_layers", h.n_layers, 1 << 10}, {"n_heads", h.n_heads, 1 << 10},
                          {"n_kv_heads", h.n_kv_heads, 1 << 10}, {"vocab_size", vocab, 1 << 22},
                          {"seq_len", h.seq_len, 1 << 22}};
  for (const Field& f : fields) {
    if (f.value <= 0)
      return invalid_argument(path + ": llama2.c header field '" + f.name + "' is " + std::to_string(f.value) +
                              "; expected a positive count");
    if (f.value > f.max)
      return invalid_argument(path + ": llama2.c header field '" + f.name + "' is " + std::to_string(f.value) +
                              "; expected at most " + std::to_string(f.max));
  }
  if (h.dim % h.n_heads != 0)
    return invalid_argument(path + ": llama2.c header field 'dim' (" + std::to_string(h.dim) +
                            ") is not divisible by 'n_heads' (" + std::to_string(h.n_heads) + ")");
  if (h.n_heads % h.n_kv_heads != 0)
    return invalid_argument(path + ": llama2.c header field 'n_heads' (" + std::to_string(h.n_heads) +
                            ") is not divisible by 'n_kv_heads' (" + std::to_string(h.n_kv_heads) + ")");
  if ((h.dim / h.n_heads) % 2 != 0)
    return invalid_argument(path + ": llama2.c header: head size dim/n_heads = " + std::to_string(h.dim / h.n_heads) +
                            " is odd; RoPE needs an even head size");
  return Status::ok();
}

// Hands out consecutive f32 arrays of the checkpoint as tensors.
class Cursor {
 public:
  Cursor(ModelWeights& m, const std::byte* base) : m_(m), base_(base) {}
  void skip(uint64_t floats) { pos_ += floats * 4; }
  // `count` consecutive tensors of `shape`, named by `name(i)`.
  template <class NameFn>
  void take(int count, const Shape& shape, NameFn name) {
    const TensorDesc desc = TensorDesc::contiguous(DType::f32, shape);
    for (int i = 0; i < count; ++i) {
      m_.tensors.push_back({name(i), desc, {base_ + pos_, (size_t)desc.bytes()}});
      pos_ += desc.bytes();
    }
  }
  uint64_t pos() const { return pos_; }

 private:
  ModelWeights& m_;
  const std::byte* base_;
  uint64_t pos_ = kHeaderBytes;
};

std::string blk(int i, const char* what) { return "blk." + std::to_string(i) + "." + what + ".weight"; }
}  // namespace

Expected<ModelWeights> load_llama2c(const std::string& path) {
  TS_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  if (file.size() < kHeaderBytes)
    return invalid_argument(path + ": file is " + std::to_string(file.size()) +
                            " bytes; the llama2.c header (7 int32: dim, hidden_dim, n_layers, n_heads, n_kv_heads, "
                            "vocab_size, seq_len) needs 28");
  Header h;
  std::memcpy(&h, file.data(), sizeof h);
  TS_TRY(check_header(path, h));

  const bool shared = h.vocab_size > 0;
  const int64_t dim = h.dim, hidden = h.hidden_dim, L = h.n_layers, vocab = shared ? h.vocab_size : -(int64_t)h.vocab_size;
  const int64_t head_size = dim / h.n_heads, kv_dim = head_size * h.n_kv_heads;
  // Bounded header fields keep every product below 2^60.
  const uint64_t floats = (uint64_t)(vocab * dim + L * dim * 2 + L * dim * dim * 2 + L * kv_dim * dim * 2 +
                                     L * hidden * dim * 3 + dim + (int64_t)h.seq_len * head_size +
                                     (shared ? 0 : vocab * dim));
  const uint64_t expected = kHeaderBytes + floats * 4;
  if (file.size() != expected)
    return invalid_argument(path + ": file is " + std::to_string(file.size()) + " bytes; the llama2.c header (dim " +
                            std::to_string(dim) + ", hidden_dim " + std::to_string(hidden) + ", n_layers " +
                            std::to_string(L) + ", n_heads " + std::to_string(h.n_heads) + ", n_kv_heads " +
                            std::to_string(h.n_kv_heads) + ", vocab_size " + std::to_string(h.vocab_size) +
                            ", seq_len " + std::to_string(h.seq_len) + ") implies " + std::to_string(expected));

  ModelWeights m;
  m.source = path;
  m.format = "llama2c";
  TransformerConfig& c = m.config;
  c.dim = h.dim;
  c.hidden_dim = h.hidden_dim;
  c.n_layers = h.n_layers;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.vocab_size = (int32_t)vocab;
  c.context_length = h.seq_len;
  c.rope_dims = (int32_t)head_size;
  c.rope_theta = 10000.0f;
  c.rms_eps = 1e-5f;
  c.rope_layout = RopeLayout::interleaved;
  c.tied_embeddings = shared;
  TS_TRY(c.validate(path));

  // run.c's order; per-layer arrays are [L, ...] and split into blk.N tensors.
  Cursor cur(m, file.data());
  const int n = (int)L;
  cur.take(1, {vocab, dim}, [](int) { return std::string("token_embd.weight"); });
  cur.take(n, {dim}, [](int i) { return blk(i, "attn_norm"); });
  cur.take(n, {dim, dim}, [](int i) { return blk(i, "attn_q"); });
  cur.take(n, {kv_dim, dim}, [](int i) { return blk(i, "attn_k"); });
  cur.take(n, {kv_dim, dim}, [](int i) { return blk(i, "attn_v"); });
  cur.take(n, {dim, dim}, [](int i) { return blk(i, "attn_output"); });
  cur.take(n, {dim}, [](int i) { return blk(i, "ffn_norm"); });
  cur.take(n, {hidden, dim}, [](int i) { return blk(i, "ffn_gate"); });  // w1
  cur.take(n, {dim, hidden}, [](int i) { return blk(i, "ffn_down"); });  // w2
  cur.take(n, {hidden, dim}, [](int i) { return blk(i, "ffn_up"); });    // w3
  cur.take(1, {dim}, [](int) { return std::string("output_norm.weight"); });
  cur.skip((uint64_t)h.seq_len * head_size);  // freq_cis_real and freq_cis_imag: RoPE is computed, not read
  if (!shared) cur.take(1, {vocab, dim}, [](int) { return std::string("output.weight"); });

  m.metadata["llama2c.shared_classifier"] = shared ? "true" : "false";
  auto mapped = std::make_shared<const MappedFile>(std::move(file));
  m.mappings.push_back(mapped);
  m.storage = std::move(mapped);
  return m;
}

}  // namespace tessera
