// matmul_qkv and matmul_silu_mul: matmuls over a weight that packs several
// projections' rows (phi3's attn_qkv and gate/up ffn_up as the file stores
// them; the weights the fuse_qkv and fuse_gate_up passes pack). Each part is
// encode_matmul's own encoding of a plain matmul over its range of rows (the
// binding starts mid-weight; the shaders take any 2-byte-aligned start), so
// each output is bit for bit the unfused matmul's on this device, whatever
// encode_matmul does to x first. matmul_silu_mul writes the gate product to
// its output and the up product to the executable's intermediate buffer,
// then runs silu_mul's dispatch over the two, as the unfused ops would.
#include <cstdint>
#include <string>
#include <variant>

#include "backends/vulkan/encode.h"

namespace tessera::vulkan {

namespace {

// A plan buffer index no plan reaches: the tensor lives in the intermediate buffer.
constexpr uint32_t kIntermediateBuffer = UINT32_MAX;

// The executable's context, with kIntermediateBuffer bound to `intermediate`.
class WithIntermediate final : public EncodeContext {
 public:
  WithIntermediate(EncodeContext& inner, TensorBinding intermediate) : inner_(inner), intermediate_(intermediate) {}
  DeviceContext& device() override { return inner_.device(); }
  const Plan& plan() const override { return inner_.plan(); }
  TensorBinding bind(const PlanTensor& t, bool written) override {
    if (t.buffer != kIntermediateBuffer) return inner_.bind(t, written);
    return TensorBinding{intermediate_.buffer, intermediate_.offset + t.offset, t.desc.bytes(), written};
  }
  Expected<TensorBinding> scratch(uint64_t bytes) override { return inner_.scratch(bytes); }
  Expected<TensorBinding> intermediate(uint64_t) override {
    return internal_error("vulkan: a packed matmul's part asked for the intermediate buffer it holds");
  }
  Expected<RopeTable> rope_table(const RopeParams& p, uint32_t positions, const PlanTensor* factors) override {
    return inner_.rope_table(p, positions, factors);
  }
  uint32_t max_positions() const override { return inner_.max_positions(); }

 private:
  EncodeContext& inner_;
  TensorBinding intermediate_;
};

// The plain matmul of x by rows [first, first + rows) of d's packed weight, into y.
Dispatch part_matmul(const Dispatch& d, uint64_t first, uint64_t rows, const PlanTensor& y) {
  const PlanTensor& w = d.inputs[1];
  PlanTensor part_w = w;
  part_w.offset = w.offset + first * (uint64_t)w.desc.row_bytes();
  part_w.desc = TensorDesc::contiguous(w.desc.dtype, Shape{(int64_t)rows, w.desc.shape[1]});
  Dispatch part;
  part.op = OpKind::matmul;
  part.params = NoParams{};
  part.inputs = {d.inputs[0], part_w};
  part.outputs = {y};
  part.label = d.label;
  part.tile = d.tile;
  return part;
}

}  // namespace

Status encode_packed_matmul(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out) {
  const PlanTensor& w = d.inputs[1];
  // rows_x4 interleaves each 4 rows' blocks: a part would not be a range of bytes.
  if (w.layout != WeightLayout::rows)
    return unsupported(std::string(name(d.op)) + ": the vulkan shaders read weights in the rows layout only");
  const uint64_t n = (uint64_t)w.desc.shape[0];
  if (d.op == OpKind::matmul_qkv) {
    const auto& p = std::get<QkvSplitParams>(d.params);
    const uint64_t q = (uint64_t)p.q_rows, kv = (uint64_t)p.kv_rows;
    if (d.outputs.size() != 3 || q + 2 * kv != n)
      return invalid_argument("matmul_qkv: q_rows=" + std::to_string(q) + " and kv_rows=" + std::to_string(kv) +
                              " do not split a weight of " + std::to_string(n) + " rows into three outputs");
    const uint64_t first[3] = {0, q, q + kv}, rows[3] = {q, kv, kv};
    for (int i = 0; i < 3; ++i) TS_TRY(encode_matmul(part_matmul(d, first[i], rows[i], d.outputs[(size_t)i]), ctx, out));
    return Status::ok();
  }
  if (d.op != OpKind::matmul_silu_mul) return internal_error("encode_packed_matmul: " + std::string(name(d.op)));
  const PlanTensor& y = d.outputs[0];
  const uint64_t f = n / 2;
  if (n % 2 != 0 || (uint64_t)y.desc.shape.last() != f)
    return invalid_argument("matmul_silu_mul: a packed gate/up weight of " + std::to_string(n) + " rows for an output of " +
                            std::to_string(y.desc.shape.last()) + " columns");
  TS_ASSIGN_OR_RETURN(const TensorBinding held, ctx.intermediate(y.desc.bytes()));
  WithIntermediate with(ctx, held);
  PlanTensor up = y;
  up.buffer = kIntermediateBuffer;
  up.offset = 0;
  TS_TRY(encode_matmul(part_matmul(d, 0, f, y), with, out));
  TS_TRY(encode_matmul(part_matmul(d, f, f, up), with, out));
  Dispatch gating;
  gating.op = OpKind::silu_mul;
  gating.params = NoParams{};
  gating.inputs = {y, up};
  gating.outputs = {y};
  gating.label = d.label;
  return encode_small_op(gating, with, out);
}

}  // namespace tessera::vulkan
