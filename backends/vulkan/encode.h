#pragma once
// Turning one Plan dispatch into Vulkan dispatches: which shader, its
// specialization constants, the tensors it binds, its push constants and its
// workgroup counts at the bucket's maximum sizes (shaders skip rows past the
// step's counts, read from the step parameters). One op may become several
// dispatches (attention: split then merge; a weight larger than one binding
// can address: one dispatch per chunk of rows).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/allocator.h"
#include "backends/vulkan/context.h"
#include "core/hal/plan.h"

namespace tessera::vulkan {

// A byte range of a buffer one binding of a dispatch covers.
struct TensorBinding {
  const VulkanBuffer* buffer = nullptr;
  uint64_t offset = 0;  // of the tensor, from the buffer's byte 0
  uint64_t bytes = 0;   // extent the shader may touch (at the bucket's maximum)
  bool written = false;
};

struct EncodedDispatch {
  std::string shader;            // kernels/vulkan/<shader>.comp
  std::vector<uint32_t> spec;    // specialization constants 0, 1, ...
  std::vector<TensorBinding> bindings;  // bindings 1, 2, ...
  std::vector<uint32_t> push;    // push-constant words after off[8]
  uint32_t groups[3] = {1, 1, 1};
  const Dispatch* source = nullptr;
};

// A RoPE cos/sin table on the device: `positions` rows of (cos, sin) per rotated pair.
struct RopeTable {
  TensorBinding binding;
  uint32_t positions = 0;
};

// What the encoders need from the executable being compiled.
class EncodeContext {
 public:
  virtual ~EncodeContext() = default;
  virtual DeviceContext& device() = 0;
  virtual const Plan& plan() const = 0;
  virtual TensorBinding bind(const PlanTensor& t, bool written) = 0;
  // Scratch owned by the executable (attention partials), at least `bytes`.
  virtual Expected<TensorBinding> scratch(uint64_t bytes) = 0;
  // Scratch apart from scratch(), for a fused op's intermediate value
  // (matmul_silu_mul's up product): the encoders it calls may use scratch()
  // for their own temporaries.
  virtual Expected<TensorBinding> intermediate(uint64_t bytes) = 0;
  // RoPE's cos/sin per (position, pair) for positions 0 .. positions-1,
  // computed on the host with the reference formula (kernels/rope_math.h),
  // freq_scale and the frequency factors included. The factors are read from
  // the device when they are a weight (weights do not change once imported);
  // other factors (a value the step computes) give a table of no positions,
  // and the shader computes every angle.
  virtual Expected<RopeTable> rope_table(const RopeParams& p, uint32_t positions, const PlanTensor* factors) = 0;
  // Positions a step of this plan can hold per sequence (block tables * block size).
  virtual uint32_t max_positions() const = 0;
};

// Appends the dispatches for `d`; the Status names the dispatch's label when
// the device cannot run it (e.g. a tensor past the device's binding range).
Status encode_dispatch(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out);

// Per-op encoders (encode_*.cpp).
Status encode_matmul(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out);
Status encode_embedding(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out);
Status encode_attention(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out);
Status encode_small_op(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out);
// matmul_qkv and matmul_silu_mul: matmuls over row ranges of the packed weight (encode_packed_matmul.cpp).
Status encode_packed_matmul(const Dispatch& d, EncodeContext& ctx, std::vector<EncodedDispatch>& out);

// Helpers shared by the encoders.
uint32_t rows_kind(RowCount r);
uint32_t float_bits(float f);
uint32_t kv_type_code(DType t);  // KV_* in kernels/vulkan/kv_pool.glsl: f32 0, f16 1, bf16 2, q8_0 3, fp8_e4m3 4
uint32_t weight_type_constant(DType t);  // WT_* in kernels/vulkan/common.glsl
// Workgroup counts for `groups` workgroups in x, spilling into y past the device limit.
void spread_groups(uint64_t groups, const VkPhysicalDeviceLimits& limits, uint32_t out[3]);
// The byte range of rows [first, first + n) of a weight bound at `w`.
TensorBinding weight_rows(const TensorBinding& w, uint64_t row_bytes, uint64_t first, uint64_t n);
// The most bytes one storage-buffer binding may cover on this device.
uint64_t binding_limit(const DeviceContext& ctx);
// Rows of `row_bytes` that fit one binding on this device (after alignment slack).
uint64_t rows_per_binding(const DeviceContext& ctx, uint64_t row_bytes);

}  // namespace tessera::vulkan
