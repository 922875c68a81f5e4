#include "engine/bench/synthetic_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/huge_pages.h"

namespace tessera {
namespace {

constexpr uint64_t kTensorAlign = 64;
// Weights are generated in units of this many elements, each from its own
// random stream, so the bytes do not depend on how units meet threads.
constexpr int64_t kUnitElems = int64_t{1} << 20;  // a multiple of every block size

struct PlannedTensor {
  std::string name;
  TensorDesc desc;
  uint64_t offset = 0;
  bool is_norm = false;
  float std = 0.0f;  // matrices: target standard deviation
  int64_t first_unit = 0, units = 0;
};

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool supported(DType t) {
  switch (t) {
    case DType::f32: case DType::f16: case DType::bf16:
    case DType::q8_0: case DType::q4_0: case DType::q4_K: return true;
    default: return false;
  }
}

Status check_spec(const SyntheticSpec& spec) {
  const TransformerConfig& c = spec.config;
  auto positive = [](const char* field, int32_t v) -> Status {
    if (v <= 0) return invalid_argument(std::string("synthetic: ") + field + " must be > 0, got " + std::to_string(v));
    return Status::ok();
  };
  TS_TRY(positive("dim", c.dim));
  TS_TRY(positive("hidden_dim", c.hidden_dim));
  TS_TRY(positive("n_layers", c.n_layers));
  TS_TRY(positive("n_heads", c.n_heads));
  TS_TRY(positive("n_kv_heads", c.n_kv_heads));
  TS_TRY(positive("vocab_size", c.vocab_size));
  if (c.dim % c.n_heads != 0) {
    return invalid_argument("synthetic: dim " + std::to_string(c.dim) + " is not a multiple of n_heads " +
                            std::to_string(c.n_heads));
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return invalid_argument("synthetic: n_heads " + std::to_string(c.n_heads) + " is not a multiple of n_kv_heads " +
                            std::to_string(c.n_kv_heads));
  }
  if (!supported(spec.weight_type)) {
    return unsupported("synthetic: weight type " + std::string(name(spec.weight_type)) +
                       " (supported: f32, f16, bf16, q8_0, q4_0, q4_K)");
  }
  // Matrices' inner dimensions are dim (q, k, v, gate, up, output, token_embd) and hidden_dim (down).
  const uint32_t block = traits(spec.weight_type).block_elems;
  for (auto [field, v] : {std::pair<const char*, int32_t>{"dim", c.dim}, {"hidden_dim", c.hidden_dim}}) {
    if (v % (int64_t)block != 0) {
      return invalid_argument("synthetic: " + std::string(field) + " " + std::to_string(v) + " is not a multiple of " +
                              std::string(name(spec.weight_type)) + "'s " + std::to_string(block) + "-element block");
    }
  }
  return Status::ok();
}

// Tensor list in file order with offsets; returns the total byte count.
uint64_t plan_tensors(const SyntheticSpec& spec, std::vector<PlannedTensor>* out) {
  const TransformerConfig& c = spec.config;
  const DType wt = spec.weight_type;
  const int64_t dim = c.dim, hidden = c.hidden_dim, q_dim = (int64_t)c.n_heads * c.head_dim(), kv_dim = c.kv_dim();
  uint64_t offset = 0;
  int64_t units = 0;
  auto add = [&](std::string name, bool is_norm, Shape shape) {
    PlannedTensor t;
    t.name = std::move(name);
    t.is_norm = is_norm;
    t.desc = TensorDesc::contiguous(is_norm ? DType::f32 : wt, shape);
    t.std = is_norm ? 0.0f : 1.0f / std::sqrt((float)shape.last());
    offset = round_up(offset, kTensorAlign);
    t.offset = offset;
    offset += t.desc.bytes();
    t.first_unit = units;
    t.units = (shape.numel() + kUnitElems - 1) / kUnitElems;
    units += t.units;
    out->push_back(std::move(t));
  };
  add("token_embd.weight", false, {c.vocab_size, dim});
  for (int32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", true, {dim});
    add(p + "attn_q.weight", false, {q_dim, dim});
    add(p + "attn_k.weight", false, {kv_dim, dim});
    add(p + "attn_v.weight", false, {kv_dim, dim});
    add(p + "attn_output.weight", false, {dim, q_dim});
    add(p + "ffn_norm.weight", true, {dim});
    add(p + "ffn_gate.weight", false, {hidden, dim});
    add(p + "ffn_up.weight", false, {hidden, dim});
    add(p + "ffn_down.weight", false, {dim, hidden});
  }
  add("output_norm.weight", true, {dim});
  if (!c.tied_embeddings) add("output.weight", false, {c.vocab_size, dim});
  return round_up(offset, kTensorAlign);
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Random bytes with the low bit of every code set: q8_0 codes become the odd
// values -127..127 and 4-bit codes the odd values 1..15, both symmetric about
// the block's zero point, so weights are exactly zero-mean.
void fill_codes(uint64_t& rng, uint8_t* dst, size_t bytes, uint64_t odd_mask) {
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t v = splitmix64(rng) | odd_mask;
    std::memcpy(dst + i, &v, std::min<size_t>(8, bytes - i));
  }
}

// Standard deviation of the odd codes: sqrt(mean of squares of ±1, ±3, ..., ±127) and of ±1, ..., ±7.
const float kStdOddQ8 = std::sqrt(16383.0f / 3.0f);  // 73.90
const float kStdOddQ4 = std::sqrt(21.0f);            // 4.583

// Elements [begin, end) of tensor t (a whole number of blocks).
void fill_unit(const PlannedTensor& t, std::byte* base, int64_t begin, int64_t end, uint64_t& rng) {
  std::byte* dst = base + t.offset;
  const int64_t n = end - begin;
  if (t.is_norm) {
    float* y = reinterpret_cast<float*>(dst) + begin;
    std::fill(y, y + n, 1.0f);
    return;
  }
  switch (t.desc.dtype) {
    case DType::q8_0: {
      const uint16_t d = f32_to_f16(t.std / kStdOddQ8);
      BlockQ8_0* y = reinterpret_cast<BlockQ8_0*>(dst) + begin / kQK8_0;
      for (int64_t b = 0; b < n / kQK8_0; ++b) {
        y[b].d = d;
        fill_codes(rng, reinterpret_cast<uint8_t*>(y[b].qs), sizeof y[b].qs, 0x0101010101010101ull);
      }
      return;
    }
    case DType::q4_0: {
      const uint16_t d = f32_to_f16(t.std / kStdOddQ4);
      BlockQ4_0* y = reinterpret_cast<BlockQ4_0*>(dst) + begin / kQK4_0;
      for (int64_t b = 0; b < n / kQK4_0; ++b) {
        y[b].d = d;
        fill_codes(rng, y[b].qs, sizeof y[b].qs, 0x1111111111111111ull);
      }
      return;
    }
    case DType::q4_K: {
      // Every sub-block gets scale 1 and min 8 (6-bit fields, ggml's packing):
      // y = d * q - d * 8, the same zero-mean odd codes as q4_0.
      const uint16_t d = f32_to_f16(t.std / kStdOddQ4);
      uint8_t scales[12];
      for (int j = 0; j < 4; ++j) scales[j] = 1;
      for (int j = 4; j < 8; ++j) scales[j] = 8;
      for (int j = 8; j < 12; ++j) scales[j] = 0x81;
      BlockQ4_K* y = reinterpret_cast<BlockQ4_K*>(dst) + begin / kQK_K;
      for (int64_t b = 0; b < n / kQK_K; ++b) {
        y[b].d = d;
        y[b].dmin = d;
        std::memcpy(y[b].scales, scales, sizeof scales);
        fill_codes(rng, y[b].qs, sizeof y[b].qs, 0x1111111111111111ull);
      }
      return;
    }
    default: {
      // Plain types: uniform on [-a, a), a = std * sqrt(3).
      const float a = t.std * std::sqrt(3.0f);
      for (int64_t i = 0; i < n; ++i) {
        const float u = (float)(splitmix64(rng) >> 40) * (1.0f / 16777216.0f);
        const float v = (2.0f * u - 1.0f) * a;
        switch (t.desc.dtype) {
          case DType::f32: reinterpret_cast<float*>(dst)[begin + i] = v; break;
          case DType::f16: reinterpret_cast<uint16_t*>(dst)[begin + i] = f32_to_f16(v); break;
          case DType::bf16: reinterpret_cast<uint16_t*>(dst)[begin + i] = f32_to_bf16(v); break;
          default: break;
        }
      }
      return;
    }
  }
}

std::string shape_name(const SyntheticSpec& spec) {
  const TransformerConfig& c = spec.config;
  return "dim=" + std::to_string(c.dim) + ",hidden=" + std::to_string(c.hidden_dim) + ",layers=" +
         std::to_string(c.n_layers) + ",heads=" + std::to_string(c.n_heads) + ",kv_heads=" +
         std::to_string(c.n_kv_heads) + ",vocab=" + std::to_string(c.vocab_size) + "," +
         std::string(name(spec.weight_type));
}

// One allocation for the whole model; big ones on huge pages
// (core/huge_pages.h), which also halves page-fault time.
std::shared_ptr<const void> allocate_storage(uint64_t bytes) {
  if (bytes >= 64 * kHugePageBytes) {
    HostBytes p = allocate_huge_pages(bytes);
    if (!p) return nullptr;
    return std::shared_ptr<const void>(p.release(), [](const void* q) { std::free(const_cast<void*>(q)); });
  }
  void* p = std::aligned_alloc(kTensorAlign, round_up(std::max<uint64_t>(bytes, 1), kTensorAlign));
  if (!p) return nullptr;
  return std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
}

}  // namespace

Expected<DType> synthetic_weight_type(const std::string& name, const std::string& what) {
  const auto type = dtype_from_name(name);
  if (!type || (*type != DType::q8_0 && *type != DType::q4_0 && *type != DType::f16 && *type != DType::f32))
    return invalid_argument(what + ": '" + name + "'; expected q8_0, q4_0, f16 or f32");
  return *type;
}

SyntheticSpec default_bench_spec(DType weight_type) {
  SyntheticSpec s;
  s.weight_type = weight_type;
  TransformerConfig& c = s.config;
  c.dim = 2048;
  c.hidden_dim = 8192;
  c.n_heads = 32;
  c.n_kv_heads = 8;
  c.vocab_size = 32000;
  c.context_length = 2048;
  c.rope_dims = c.dim / c.n_heads;
  c.rope_theta = 10000.0f;
  c.rms_eps = 1e-5f;
  c.rope_layout = RopeLayout::interleaved;
  c.tied_embeddings = false;
  const auto& tr = traits(weight_type);
  const bool under_a_byte = tr.block_bytes < tr.block_elems;
  c.n_layers = under_a_byte ? 48 : 24;
  return s;
}

uint64_t synthetic_model_bytes(const SyntheticSpec& spec) {
  if (!check_spec(spec).is_ok()) return 0;
  std::vector<PlannedTensor> plan;
  return plan_tensors(spec, &plan);
}

Expected<ModelWeights> make_synthetic_llama(const SyntheticSpec& spec, ParallelFor& pf) {
  TS_TRY(check_spec(spec));
  std::vector<PlannedTensor> plan;
  const uint64_t total = plan_tensors(spec, &plan);
  std::shared_ptr<const void> storage = allocate_storage(total);
  if (!storage) {
    return resource_exhausted("synthetic: cannot allocate " + std::to_string(total) + " bytes for " + shape_name(spec));
  }
  std::byte* base = static_cast<std::byte*>(const_cast<void*>(storage.get()));

  // Alignment gaps are zeroed so the whole storage is a function of the seed.
  for (size_t i = 0; i < plan.size(); ++i) {
    const uint64_t end = plan[i].offset + plan[i].desc.bytes();
    const uint64_t next = i + 1 < plan.size() ? plan[i + 1].offset : total;
    std::memset(base + end, 0, next - end);
  }
  const int64_t total_units = plan.back().first_unit + plan.back().units;
  pf.run(total_units, 1, [&](int64_t u0, int64_t u1) {
    // The tensor holding unit u0, then walk forward.
    auto it = std::upper_bound(plan.begin(), plan.end(), u0,
                               [](int64_t u, const PlannedTensor& t) { return u < t.first_unit; });
    size_t ti = (size_t)(it - plan.begin()) - 1;
    for (int64_t u = u0; u < u1; ++u) {
      while (u >= plan[ti].first_unit + plan[ti].units) ++ti;
      const PlannedTensor& t = plan[ti];
      const int64_t local = u - t.first_unit;
      const int64_t begin = local * kUnitElems;
      const int64_t end = std::min(t.desc.shape.numel(), begin + kUnitElems);
      uint64_t rng = spec.seed ^ ((uint64_t)ti * 0xd1b54a32d192ed03ull) ^ ((uint64_t)local * 0x8cb92ba72f3d8dd7ull);
      splitmix64(rng);
      fill_unit(t, base, begin, end, rng);
    }
  });

  ModelWeights w;
  w.format = "synthetic";
  w.source = "synthetic:" + shape_name(spec);
  w.config = spec.config;
  w.metadata["synthetic.seed"] = std::to_string(spec.seed);
  w.metadata["synthetic.weight_type"] = std::string(name(spec.weight_type));
  w.tensors.reserve(plan.size());
  for (const PlannedTensor& t : plan) {
    w.tensors.push_back(WeightTensor{t.name, t.desc, std::span<const std::byte>(base + t.offset, t.desc.bytes())});
  }
  w.storage = std::move(storage);
  return w;
}

}  // namespace tessera
