#include "backends/vulkan/executable.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "backends/vulkan/recording.h"
#include "kernels/rope_math.h"

namespace tessera::vulkan {

namespace {

constexpr uint64_t kStepParamsBytes = 64;  // kernels/vulkan/common.glsl StepParams, padded
constexpr uint64_t kFieldAlign = 256;      // the largest minStorageBufferOffsetAlignment Vulkan allows

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

// The executable as the encoders see it while it is being compiled.
class ExecutableEncodeContext final : public EncodeContext {
 public:
  ExecutableEncodeContext(VulkanExecutable& exe, Transfer& transfer) : exe_(exe), transfer_(transfer) {}
  DeviceContext& device() override { return *exe_.ctx_; }
  const Plan& plan() const override { return exe_.plan_; }
  TensorBinding bind(const PlanTensor& t, bool written) override {
    return TensorBinding{exe_.buffers_[t.buffer], t.offset, t.desc.bytes(), written};
  }

  // Dispatches that use scratch run one after another (the barrier tracking
  // orders them), so one buffer, as large as the largest request, serves all.
  Expected<TensorBinding> scratch(uint64_t bytes) override { return grown(scratch_, bytes); }

  // One buffer serves all, as scratch does; a separate one, so that what
  // the fused op keeps there outlives the scratch its parts use.
  Expected<TensorBinding> intermediate(uint64_t bytes) override { return grown(intermediate_, bytes); }

  Expected<RopeTable> rope_table(const RopeParams& p, uint32_t positions, const PlanTensor* factors) override {
    const uint32_t half = (uint32_t)p.rot_dims / 2;
    std::vector<float> f;
    if (factors) {
      if (exe_.plan_.buffers[factors->buffer].role != BufferRole::weight) positions = 0;  // known only when a step runs
      else {
        f.resize(half);
        TS_TRY(transfer_.read(*exe_.buffers_[factors->buffer], factors->offset,
                              {reinterpret_cast<std::byte*>(f.data()), f.size() * sizeof(float)}));
      }
    }
    std::vector<uint32_t> factor_bits(f.size());  // compared as bits: a NaN factor would break the map's order
    if (!f.empty()) std::memcpy(factor_bits.data(), f.data(), f.size() * sizeof(float));
    auto key = std::make_tuple(p.theta, p.rot_dims, positions, p.freq_scale, std::move(factor_bits));
    auto it = tables_.find(key);
    if (it != tables_.end()) return RopeTable{TensorBinding{it->second, 0, it->second->size(), false}, positions};
    // kernels/rope_math.h's formula, the CPU's, so the shader rotates by
    // exactly the values the CPU uses.
    std::vector<float> cs((size_t)std::max<uint64_t>((uint64_t)positions * half * 2, 2), 0.0f);
    for (uint32_t pos = 0; pos < positions; ++pos)
      for (uint32_t i = 0; i < half; ++i)
        kernels::rope_cos_sin_scaled((int32_t)pos, (int)i, p.rot_dims, p.theta, p.freq_scale, f.empty() ? 1.0f : f[i],
                                     cs[((size_t)pos * half + i) * 2], cs[((size_t)pos * half + i) * 2 + 1]);
    const uint64_t bytes = cs.size() * sizeof(float);
    TS_ASSIGN_OR_RETURN(auto b, VulkanBuffer::create(exe_.ctx_, bytes, MemoryUse::activations, MemoryKind::device_local));
    TS_TRY(transfer_.write(*b, 0, {reinterpret_cast<const std::byte*>(cs.data()), bytes}, 0));
    VulkanBuffer* raw = b.get();
    exe_.owned_.push_back(std::move(b));
    tables_[std::move(key)] = raw;
    return RopeTable{TensorBinding{raw, 0, bytes, false}, positions};
  }

  uint32_t max_positions() const override {
    return (uint32_t)((uint64_t)exe_.plan_.bucket.max_blocks_per_seq * (uint64_t)std::max(exe_.limits_.block_size, 1));
  }

 private:
  // `slot`, replaced by a buffer of `bytes` when it is smaller (the old one
  // stays owned by the executable until it goes), bound from its start.
  Expected<TensorBinding> grown(VulkanBuffer*& slot, uint64_t bytes) {
    if (!slot || slot->size() < bytes) {
      TS_ASSIGN_OR_RETURN(auto b, VulkanBuffer::create(exe_.ctx_, bytes, MemoryUse::activations, MemoryKind::device_local));
      slot = b.get();
      exe_.owned_.push_back(std::move(b));
    }
    return TensorBinding{slot, 0, bytes, false};
  }

  VulkanExecutable& exe_;
  Transfer& transfer_;
  VulkanBuffer* scratch_ = nullptr;
  VulkanBuffer* intermediate_ = nullptr;
  // By theta, rot_dims, positions, freq_scale and the factors' values.
  std::map<std::tuple<float, int32_t, uint32_t, float, std::vector<uint32_t>>, VulkanBuffer*> tables_;
};

Status VulkanExecutable::allocate_buffers(std::span<Buffer* const> bound) {
  buffers_.assign(plan_.buffers.size(), nullptr);
  field_offsets_.assign(plan_.buffers.size(), 0);
  step_block_bytes_ = kStepParamsBytes;
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const PlanBuffer& pb = plan_.buffers[i];
    switch (pb.role) {
      case BufferRole::weight:
      case BufferRole::kv_pool:
      case BufferRole::transfer: {
        auto* vb = i < bound.size() ? dynamic_cast<VulkanBuffer*>(bound[i]) : nullptr;
        if (!vb || vb->context() != ctx_.get())
          return invalid_argument("vulkan: plan buffer '" + pb.name + "' is not bound to a buffer of this device");
        if (vb->size() < pb.bytes)
          return invalid_argument("vulkan: buffer bound to '" + pb.name + "' holds " + std::to_string(vb->size()) +
                                  " bytes; the plan needs " + std::to_string(pb.bytes));
        buffers_[i] = vb;
        break;
      }
      case BufferRole::arena: {
        if (i < bound.size() && bound[i]) {  // shared with the caller's other plans
          auto* vb = dynamic_cast<VulkanBuffer*>(bound[i]);
          if (!vb || vb->context() != ctx_.get() || vb->size() < pb.bytes)
            return invalid_argument("vulkan: the arena bound to '" + pb.name + "' is not a large enough buffer of this device");
          buffers_[i] = vb;
          break;
        }
        TS_ASSIGN_OR_RETURN(auto b, VulkanBuffer::create(ctx_, std::max<uint64_t>(pb.bytes, 64), MemoryUse::activations,
                                                         MemoryKind::device_local));
        buffers_[i] = b.get();
        owned_.push_back(std::move(b));
        break;
      }
      case BufferRole::step_input:
        step_block_bytes_ = align_up(step_block_bytes_, kFieldAlign);
        field_offsets_[i] = step_block_bytes_;
        step_block_bytes_ += std::max<uint64_t>(pb.bytes, 4);
        break;
    }
  }
  // All step arrays in one buffer: one staged copy a step. The copy is made
  // even where the block is host-visible (lavapipe, integrated GPUs): written
  // in place, the next step's inputs would have to wait for this step to end.
  TS_ASSIGN_OR_RETURN(auto block, VulkanBuffer::create(ctx_, step_block_bytes_, MemoryUse::step_input, MemoryKind::device_local));
  step_block_ = block.get();
  owned_.push_back(std::move(block));
  for (StepSlot& slot : slots_) {
    TS_ASSIGN_OR_RETURN(auto staging, VulkanBuffer::create(ctx_, step_block_bytes_, MemoryUse::step_input, MemoryKind::staging));
    if (!staging->mapped()) return internal_error("vulkan: step staging memory is not host-visible");
    slot.staging = staging.get();
    owned_.push_back(std::move(staging));
  }
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    if (plan_.buffers[i].role != BufferRole::step_input) continue;
    owned_.push_back(VulkanBuffer::view(*step_block_, field_offsets_[i], plan_.buffers[i].bytes, MemoryUse::step_input));
    buffers_[i] = owned_.back().get();
  }
  return Status::ok();
}

Expected<std::unique_ptr<VulkanExecutable>> VulkanExecutable::create(std::shared_ptr<DeviceContext> ctx, Transfer& transfer,
                                                                     const Plan& plan, std::span<Buffer* const> bound) {
  std::unique_ptr<VulkanExecutable> exe(new VulkanExecutable(std::move(ctx), plan));
  exe->limits_ = step_limits(exe->plan_);
  TS_TRY(exe->allocate_buffers(bound));
  ExecutableEncodeContext ec(*exe, transfer);
  for (const Dispatch& d : exe->plan_.dispatches) TS_TRY(encode_dispatch(d, ec, exe->dispatches_));
  std::vector<StepCopy> copies;
  for (const StepSlot& slot : exe->slots_) copies.push_back({slot.staging, exe->step_block_, exe->step_block_bytes_});
  TS_ASSIGN_OR_RETURN(exe->recording_,
                      Recording::create(exe->ctx_, exe->dispatches_, *exe->step_block_, copies, exe->plan_.bucket.max_tokens));
  return exe;
}

VulkanExecutable::~VulkanExecutable() {
  // The recorded buffers and every buffer they name must outlive the last submission.
  if (!recording_) return;
  for (uint32_t s = 0; s < kSlots; ++s)
    if (ctx_->wait(slots_[s].last_submit).is_ok() && slots_[s].uncollected) recording_->collect_profile(s);
}

VkCommandBuffer VulkanExecutable::command_buffer(uint32_t slot) const { return recording_->handle(slot); }

Expected<uint32_t> VulkanExecutable::prepare(const StepArgs& a) {
  TS_TRY(check_step_args(plan_.bucket, limits_, a));
  const uint32_t s = next_slot_;
  StepSlot& slot = slots_[s];
  TS_TRY(ctx_->wait(slot.last_submit));  // step N-1, not step N
  if (slot.uncollected) recording_->collect_profile(s);
  slot.uncollected = false;
  std::byte* block = slot.staging->mapped();
  const uint32_t params[4] = {(uint32_t)a.n_tokens, (uint32_t)a.n_seqs, (uint32_t)a.n_logit_rows,
                              (uint32_t)plan_.bucket.max_blocks_per_seq};
  std::memcpy(block, params, sizeof(params));
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const PlanBuffer& pb = plan_.buffers[i];
    if (pb.role != BufferRole::step_input) continue;
    const int32_t* src = step_field_data(a, pb.field);
    const int64_t n = step_field_count(a, pb.field, plan_.bucket);
    if (n > 0 && !src) return invalid_argument(std::string("step: ") + to_string(pb.field) + " is missing");
    if ((uint64_t)n * 4 > pb.bytes) return invalid_argument(std::string("step: ") + to_string(pb.field) + " exceeds the bucket");
    if (n > 0) std::memcpy(block + field_offsets_[i], src, (size_t)n * 4);
  }
  return s;
}

}  // namespace tessera::vulkan
