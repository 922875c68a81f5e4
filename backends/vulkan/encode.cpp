#include "backends/vulkan/encode.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <variant>

namespace tessera::vulkan {

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Elementwise shaders stride over their elements; more workgroups than this
// only add scheduling work.
constexpr uint64_t kMaxStridingGroups = 4096;

EncodedDispatch striding(const char* shader, uint64_t elements, uint32_t local_size) {
  EncodedDispatch e;
  e.shader = shader;
  e.groups[0] = (uint32_t)std::clamp<uint64_t>(ceil_div(elements, local_size), 1, kMaxStridingGroups);
  return e;
}

// kernels/vulkan/elementwise.comp's OP.
uint32_t elementwise_op(OpKind op) {
  switch (op) {
    case OpKind::add: return 0;
    case OpKind::silu_mul: return 1;
    case OpKind::gelu_mul: return 2;
    case OpKind::scale: return 3;
    case OpKind::softcap: return 4;
    case OpKind::mul: return 5;
    case OpKind::silu: return 6;
    case OpKind::gelu: return 7;
    case OpKind::bias_add: return 8;
    default: return 0;
  }
}

}  // namespace

uint32_t rows_kind(RowCount r) {
  switch (r) {
    case RowCount::fixed: return 0;
    case RowCount::tokens: return 1;
    case RowCount::logit_rows: return 2;
  }
  return 0;
}

uint32_t kv_type_code(DType t) {
  switch (t) {
    case DType::f16: return 1u;
    case DType::bf16: return 2u;
    case DType::q8_0: return 3u;
    case DType::fp8_e4m3: return 4u;
    default: return 0u;
  }
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

uint32_t weight_type_constant(DType t) {
  switch (t) {
    case DType::f32: return 0;
    case DType::f16: return 1;
    case DType::bf16: return 2;
    case DType::q8_0: return 3;
    case DType::q4_0: return 4;
    case DType::q4_K: return 5;
    case DType::q4_1: return 6;
    case DType::q5_0: return 7;
    case DType::q5_1: return 8;
    case DType::iq4_nl: return 9;
    case DType::q2_K: return 10;
    case DType::q3_K: return 11;
    case DType::q5_K: return 12;
    case DType::q6_K: return 13;
    case DType::iq4_xs: return 14;
    default: return 0;
  }
}

void spread_groups(uint64_t groups, const VkPhysicalDeviceLimits& limits, uint32_t out[3]) {
  const uint64_t max_x = limits.maxComputeWorkGroupCount[0];
  groups = std::max<uint64_t>(groups, 1);
  out[0] = (uint32_t)std::min(groups, max_x);
  out[1] = (uint32_t)ceil_div(groups, out[0]);
  out[2] = 1;
}

TensorBinding weight_rows(const TensorBinding& w, uint64_t row_bytes, uint64_t first, uint64_t n) {
  TensorBinding b = w;
  b.offset = w.offset + first * row_bytes;
  b.bytes = n * row_bytes;
  return b;
}

uint64_t binding_limit(const DeviceContext& ctx) {
  // $TESSERA_VULKAN_MAX_BINDING_BYTES lowers the limit, so that the chunked
  // paths run on any device in tests.
  static const uint64_t forced = [] {
    const char* v = std::getenv("TESSERA_VULKAN_MAX_BINDING_BYTES");
    return v && *v ? std::strtoull(v, nullptr, 10) : 0ull;
  }();
  const uint64_t device = ctx.limits().maxStorageBufferRange;
  return forced ? std::min(forced, device) : device;
}

uint64_t rows_per_binding(const DeviceContext& ctx, uint64_t row_bytes) {
  const uint64_t range = binding_limit(ctx);
  const uint64_t slack = ctx.limits().minStorageBufferOffsetAlignment + 64;
  return range > slack ? std::max<uint64_t>((range - slack) / std::max<uint64_t>(row_bytes, 1), 1) : 1;
}

Status encode_dispatch(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out) {
  const size_t first = out.size();
  Status s;
  switch (d.op) {
    case OpKind::matmul: s = encode_matmul(d, ctx, out); break;
    case OpKind::embedding: s = encode_embedding(d, ctx, out); break;
    case OpKind::paged_attention: s = encode_attention(d, ctx, out); break;
    case OpKind::matmul_qkv:
    case OpKind::matmul_silu_mul: s = encode_packed_matmul(d, ctx, out); break;
    default: s = encode_small_op(d, ctx, out); break;
  }
  if (!s.is_ok()) return s.with_context("vulkan: " + d.label);
  for (size_t i = first; i < out.size(); ++i) out[i].source = &d;
  return Status::ok();
}

// The ops whose shaders are one dispatch over rows or elements.
Status encode_small_op(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out) {
  const DeviceContext& dev = ctx.device();
  const PlanTensor& o = d.outputs.empty() ? d.inputs[0] : d.outputs[0];
  const uint64_t rows = (uint64_t)o.desc.shape[0];
  const uint32_t kind = rows_kind(o.rows);
  switch (d.op) {
    case OpKind::rms_norm:
    case OpKind::head_rms_norm: {
      // head_rms_norm: each tensor row is `heads` rows of the weight's width.
      const uint64_t dim = (uint64_t)d.inputs[1].desc.shape.numel();
      const uint64_t heads = d.op == OpKind::head_rms_norm ? (uint64_t)d.inputs[0].desc.shape.last() / dim : 1;
      EncodedDispatch e;
      e.shader = "rms_norm";
      e.bindings = {ctx.bind(d.inputs[0], false), ctx.bind(d.inputs[1], false), ctx.bind(o, true)};
      e.push = {(uint32_t)dim, float_bits(std::get<RmsNormParams>(d.params).eps), kind, (uint32_t)rows, (uint32_t)heads};
      spread_groups(rows * heads, dev.limits(), e.groups);
      out.push_back(std::move(e));
      return Status::ok();
    }
    case OpKind::add:
    case OpKind::silu_mul:
    case OpKind::gelu_mul:
    case OpKind::scale:
    case OpKind::softcap:
    case OpKind::mul:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::bias_add: {
      const uint64_t cols = (uint64_t)d.inputs[0].desc.shape.last();
      EncodedDispatch e = striding("elementwise", rows * cols, 256);
      const bool unary = d.inputs.size() < 2;  // scale, softcap, silu, gelu
      e.spec = {elementwise_op(d.op)};
      e.bindings = {ctx.bind(d.inputs[0], false), ctx.bind(d.inputs[unary ? 0 : 1], false), ctx.bind(o, true)};
      const float s = d.op == OpKind::scale ? std::get<ScaleParams>(d.params).scale
                      : d.op == OpKind::softcap ? std::get<SoftcapParams>(d.params).cap
                                                : 0.0f;
      e.push = {(uint32_t)cols, kind, (uint32_t)rows, float_bits(s)};
      out.push_back(std::move(e));
      return Status::ok();
    }
    case OpKind::softmax:
    case OpKind::argmax: {
      EncodedDispatch e;
      e.shader = d.op == OpKind::softmax ? "softmax" : "argmax";
      e.bindings = {ctx.bind(d.inputs[0], false), ctx.bind(o, true)};
      e.push = {(uint32_t)d.inputs[0].desc.shape.last(), kind, (uint32_t)rows};
      spread_groups(rows, dev.limits(), e.groups);
      out.push_back(std::move(e));
      return Status::ok();
    }
    case OpKind::gather_rows: {
      const int64_t row_bytes = d.inputs[0].desc.row_bytes();
      if (row_bytes % 4) return unsupported("gather_rows copies 32-bit words; rows of " + std::to_string(row_bytes) + " bytes");
      EncodedDispatch e = striding("gather_rows", rows * (uint64_t)(row_bytes / 4), 256);
      e.bindings = {ctx.bind(d.inputs[0], false), ctx.bind(d.inputs[1], false), ctx.bind(o, true)};
      e.push = {(uint32_t)(row_bytes / 4), rows_kind(d.inputs[0].rows), (uint32_t)d.inputs[0].desc.shape[0], kind, (uint32_t)rows};
      out.push_back(std::move(e));
      return Status::ok();
    }
    case OpKind::kv_append: {
      const auto& p = std::get<KvCacheParams>(d.params);
      const uint64_t row = (uint64_t)p.n_kv_heads * p.head_dim;
      const PlanTensor& k = d.inputs[0];
      const uint64_t slots = (uint64_t)std::min(d.inputs[3].desc.shape[0], d.inputs[4].desc.shape[0]);
      const DType kv = d.inputs[3].desc.dtype;
      const bool blocks = kv == DType::q8_0 || kv == DType::fp8_e4m3;
      if (!blocks && kv != DType::f32 && row % 2 != 0)
        return unsupported("kv_append: " + std::string(name(kv)) + " KV rows of an odd width (" + std::to_string(row) +
                           ") (the vulkan shader stores two elements per word)");
      // Invocations: one per pool word (two 16-bit elements each), or per 32-element block.
      const uint64_t per_row = blocks ? row / 32 : kv == DType::f32 ? row : row / 2;
      EncodedDispatch e = striding("kv_append", (uint64_t)k.desc.shape[0] * per_row, 256);
      e.bindings = {ctx.bind(k, false), ctx.bind(d.inputs[1], false), ctx.bind(d.inputs[2], false), ctx.bind(d.inputs[3], true),
                    ctx.bind(d.inputs[4], true)};
      e.push = {(uint32_t)row, (uint32_t)slots, rows_kind(k.rows), (uint32_t)k.desc.shape[0], kv_type_code(kv)};
      out.push_back(std::move(e));
      return Status::ok();
    }
    case OpKind::rope: {
      const auto& p = std::get<RopeParams>(d.params);
      if (p.rot_dims % 2 || p.rot_dims > p.head_dim || p.rot_dims < 0)
        return invalid_argument("rope: rot_dims " + std::to_string(p.rot_dims) + " must be even and at most head_dim");
      // A third input of rank 1: llama3's per-pair frequency divisors, [rot_dims / 2]; of rank 3, a folded table.
      if (d.inputs.size() > 3 || (d.inputs.size() == 3 && d.inputs[2].desc.shape.rank != 1))
        return unsupported("rope: the vulkan shader reads no folded rope_table input");
      const PlanTensor* factors = d.inputs.size() == 3 ? &d.inputs[2] : nullptr;
      if (factors && (factors->desc.dtype != DType::f32 || factors->desc.shape.numel() != p.rot_dims / 2))
        return invalid_argument("rope: the frequency factors must be f32[" + std::to_string(p.rot_dims / 2) + "]");
      const uint64_t per_head = (uint64_t)p.rot_dims / 2 + (uint64_t)(p.head_dim - p.rot_dims + 1) / 2;
      // A table of at most 16 MiB; positions past it are computed in the shader.
      const uint64_t pair_bytes = std::max<uint64_t>((uint64_t)p.rot_dims / 2 * 8, 8);
      const uint32_t positions = (uint32_t)std::min<uint64_t>(ctx.max_positions(), (16ull << 20) / pair_bytes);
      TS_ASSIGN_OR_RETURN(const RopeTable table, ctx.rope_table(p, positions, factors));
      EncodedDispatch e = striding("rope", rows * (uint64_t)p.n_heads * per_head, 256);
      const TensorBinding x = ctx.bind(d.inputs[0], false), y = ctx.bind(o, true);
      const bool in_place = x.buffer == y.buffer && x.offset == y.offset;
      e.bindings = {x, ctx.bind(d.inputs[1], false), y, table.binding, factors ? ctx.bind(*factors, false) : TensorBinding{}};
      e.push = {(uint32_t)p.n_heads, (uint32_t)p.head_dim, (uint32_t)p.rot_dims, float_bits(p.theta),
                p.layout == RopeLayout::half_split ? 1u : 0u, table.positions, in_place ? 0u : 1u, kind, (uint32_t)rows,
                float_bits(p.freq_scale), factors ? 1u : 0u};
      out.push_back(std::move(e));
      return Status::ok();
    }
    default:
      return unsupported("no vulkan shader for " + std::string(name(d.op)));
  }
}

}  // namespace tessera::vulkan
