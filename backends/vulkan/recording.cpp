#include "backends/vulkan/recording.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "backends/vulkan/pipelines.h"

namespace tessera::vulkan {

namespace {

// A byte range of one VkBuffer some dispatch touched since the last barrier.
struct Range {
  VkBuffer buffer;
  uint64_t begin, end;
  bool overlaps(const Range& o) const { return buffer == o.buffer && begin < o.end && o.begin < end; }
};

bool any_overlap(const std::vector<Range>& a, const Range& r) {
  return std::any_of(a.begin(), a.end(), [&](const Range& x) { return x.overlaps(r); });
}

}  // namespace

bool profiling_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TESSERA_PROFILE");
    return v && *v && *v != '0';
  }();
  return on;
}

Expected<std::unique_ptr<Recording>> Recording::create(std::shared_ptr<DeviceContext> ctx, const std::vector<EncodedDispatch>& dispatches,
                                                       const VulkanBuffer& step_params, std::span<const StepCopy> slots,
                                                       int32_t bucket_tokens) {
  std::unique_ptr<Recording> r(new Recording(ctx));
  r->bucket_tokens_ = bucket_tokens;
  const VulkanApi& vk = ctx->vk();
  r->slots_.resize(slots.size());
  for (Slot& slot : r->slots_) {
    TS_ASSIGN_OR_RETURN(slot.cb, CommandBuffer::create(*ctx));
  }
  TS_ASSIGN_OR_RETURN(r->dummy_, VulkanBuffer::create(ctx, 16, MemoryUse::activations, MemoryKind::device_local));

  const uint32_t n_sets = (uint32_t)std::max<size_t>(dispatches.size(), 1);
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, n_sets * (kMaxTensorBindings + 1)};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = n_sets;
  pci.poolSizeCount = 1;
  pci.pPoolSizes = &size;
  TS_VK_TRY(vk.vkCreateDescriptorPool(ctx->device(), &pci, nullptr, &r->descriptor_pool_), "vkCreateDescriptorPool");
  std::vector<VkDescriptorSetLayout> layouts(n_sets, ctx->pipelines().set_layout());
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = r->descriptor_pool_;
  ai.descriptorSetCount = n_sets;
  ai.pSetLayouts = layouts.data();
  r->sets_.resize(n_sets);
  TS_VK_TRY(vk.vkAllocateDescriptorSets(ctx->device(), &ai, r->sets_.data()), "vkAllocateDescriptorSets");

  r->timed_ = profiling_enabled() && ctx->physical().timestamp_valid_bits && !dispatches.empty();
  for (uint32_t s = 0; s < slots.size(); ++s) {
    if (r->timed_) {
      VkQueryPoolCreateInfo qci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qci.queryCount = (uint32_t)dispatches.size() * 2;
      TS_VK_TRY(vk.vkCreateQueryPool(ctx->device(), &qci, nullptr, &r->slots_[s].queries), "vkCreateQueryPool");
    }
    TS_TRY(r->record(s, dispatches, step_params, slots[s]));
  }
  return r;
}

Recording::~Recording() {
  const VulkanApi& vk = ctx_->vk();
  for (Slot& slot : slots_)
    if (slot.queries) vk.vkDestroyQueryPool(ctx_->device(), slot.queries, nullptr);
  if (descriptor_pool_) vk.vkDestroyDescriptorPool(ctx_->device(), descriptor_pool_, nullptr);
  if (!timed_ || steps_ == 0) return;
  double total = 0;
  for (double t : op_ns_) total += t;
  std::fprintf(stderr, "profile: vulkan bucket of %d tokens, %llu steps, %.3f ms per step (GPU time)\n", bucket_tokens_,
               (unsigned long long)steps_, total / 1e6 / (double)steps_);
  for (int i = 0; i < kOpKindCount; ++i)
    if (op_calls_[(size_t)i])
      std::fprintf(stderr, "profile:   %-16s %8.3f ms/step  %5.1f%%  %llu calls\n", std::string(name((OpKind)i)).c_str(),
                   op_ns_[(size_t)i] / 1e6 / (double)steps_, 100 * op_ns_[(size_t)i] / total, (unsigned long long)op_calls_[(size_t)i]);
}

// Binds at the largest offset at or below the tensor that the device's
// alignment allows; the shader adds the remainder (push constant off[i]).
Expected<VkDescriptorBufferInfo> Recording::descriptor_for(const TensorBinding& b, uint32_t* remainder) const {
  const auto& limits = ctx_->limits();
  if (!b.buffer) {
    *remainder = 0;
    return VkDescriptorBufferInfo{dummy_->handle(), dummy_->base(), dummy_->bound_bytes()};
  }
  const uint64_t align = std::max<uint64_t>(limits.minStorageBufferOffsetAlignment, 4);
  const uint64_t abs = b.buffer->base() + b.offset;
  const uint64_t bound = (abs / align) * align;
  const uint64_t end = b.buffer->base() + b.buffer->bound_bytes();
  // The range covers the tensor and no more (so that validation layers see
  // what the shaders touch), plus, for weights, the few bytes past a quant
  // block that a 16-byte read of its last block covers (every buffer has that
  // much tail, see allocator.cpp).
  *remainder = (uint32_t)(abs - bound);
  const uint64_t slack = b.buffer->use() == MemoryUse::weights ? 32 : 0;
  const uint64_t extent = (*remainder + b.bytes + slack + 3) / 4 * 4;
  const uint64_t range = std::min<uint64_t>({binding_limit(*ctx_), end - bound, extent});
  if (*remainder + b.bytes > range)
    return unsupported("a tensor of " + std::to_string(b.bytes) + " bytes exceeds the device's storage-buffer range (" +
                       std::to_string(binding_limit(*ctx_)) + " bytes)");
  return VkDescriptorBufferInfo{b.buffer->handle(), bound, range};
}

Status Recording::record(uint32_t slot, const std::vector<EncodedDispatch>& dispatches, const VulkanBuffer& step_params,
                         const StepCopy& copy) {
  const VulkanApi& vk = ctx_->vk();
  PipelineCache& pipelines = ctx_->pipelines();
  VkCommandBuffer cb = slots_[slot].cb->handle();
  const VkQueryPool queries = slots_[slot].queries;
  const bool first = slot == 0;  // writes the shared descriptor sets and counts barriers and timed ops
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  TS_VK_TRY(vk.vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  if (queries) vk.vkCmdResetQueryPool(cb, queries, 0, (uint32_t)dispatches.size() * 2);

  // The previous step (or any earlier submission) is done with what this one overwrites.
  constexpr VkAccessFlags kShaderRW = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  if (copy.staging) {
    memory_barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, kShaderRW | VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    VkBufferCopy region{copy.staging->base(), copy.block->base(), copy.bytes};
    vk.vkCmdCopyBuffer(cb, copy.staging->handle(), copy.block->handle(), 1, &region);
  }
  memory_barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                 kShaderRW | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW);
  if (first) ++barriers_;

  std::vector<Range> reads, writes;
  VkPipeline bound_pipeline = VK_NULL_HANDLE;
  for (size_t i = 0; i < dispatches.size(); ++i) {
    const EncodedDispatch& e = dispatches[i];
    if (e.bindings.size() > kMaxTensorBindings) return internal_error("vulkan: " + e.shader + " binds too many tensors");
    TS_ASSIGN_OR_RETURN(VkPipeline pipeline, pipelines.get(e.shader, e.spec));

    // Descriptors: binding 0 the step parameters, then the tensors (unused ones: the dummy).
    VkDescriptorBufferInfo infos[kMaxTensorBindings + 1];
    uint32_t push[kPushConstantBytes / 4] = {};
    infos[0] = {step_params.handle(), step_params.base(), 64};
    for (uint32_t b = 0; b < kMaxTensorBindings; ++b) {
      const TensorBinding tb = b < e.bindings.size() ? e.bindings[b] : TensorBinding{};
      TS_ASSIGN_OR_RETURN(infos[b + 1], descriptor_for(tb, &push[b]));
    }
    if (kMaxTensorBindings + e.push.size() > kPushConstantBytes / 4)
      return internal_error("vulkan: " + e.shader + " has too many push constants");
    std::copy(e.push.begin(), e.push.end(), push + kMaxTensorBindings);
    if (first) {
      VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w.dstSet = sets_[i];
      w.dstBinding = 0;
      w.descriptorCount = kMaxTensorBindings + 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = infos;
      vk.vkUpdateDescriptorSets(ctx_->device(), 1, &w, 0, nullptr);
    }

    // A barrier only where this dispatch depends on (or would overwrite) one since the last.
    bool hazard = queries != VK_NULL_HANDLE;
    std::vector<Range> my_reads, my_writes;
    for (const TensorBinding& tb : e.bindings) {
      if (!tb.buffer) continue;
      const Range r{tb.buffer->handle(), tb.buffer->base() + tb.offset, tb.buffer->base() + tb.offset + std::max<uint64_t>(tb.bytes, 1)};
      hazard = hazard || any_overlap(writes, r) || (tb.written && any_overlap(reads, r));
      (tb.written ? my_writes : my_reads).push_back(r);
    }
    if (hazard) {
      memory_barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                     kShaderRW);
      if (first) ++barriers_;
      reads.clear();
      writes.clear();
    }
    reads.insert(reads.end(), my_reads.begin(), my_reads.end());
    writes.insert(writes.end(), my_writes.begin(), my_writes.end());

    if (pipeline != bound_pipeline) {
      vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
      bound_pipeline = pipeline;
    }
    vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines.layout(), 0, 1, &sets_[i], 0, nullptr);
    vk.vkCmdPushConstants(cb, pipelines.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes, push);
    if (queries) vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, (uint32_t)(2 * i));
    vk.vkCmdDispatch(cb, e.groups[0], e.groups[1], e.groups[2]);
    if (queries) {
      vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, (uint32_t)(2 * i + 1));
      if (first) ops_.push_back(e.source ? e.source->op : OpKind::add);
    }
  }
  // Results are visible to read-backs, by copy or through the mapping.
  memory_barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                 VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT);
  TS_VK_TRY(vk.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  return Status::ok();
}

void Recording::collect_profile(uint32_t slot) {
  const VkQueryPool queries = slots_[slot].queries;
  if (!queries || ops_.empty()) return;
  std::vector<uint64_t> ts(ops_.size() * 2);
  const VkResult r = ctx_->vk().vkGetQueryPoolResults(ctx_->device(), queries, 0, (uint32_t)ts.size(), ts.size() * 8, ts.data(), 8,
                                                      VK_QUERY_RESULT_64_BIT);
  if (r != VK_SUCCESS) return;
  const double period = ctx_->limits().timestampPeriod;
  for (size_t i = 0; i < ops_.size(); ++i) {
    op_ns_[(size_t)ops_[i]] += (double)(ts[2 * i + 1] - ts[2 * i]) * period;
    ++op_calls_[(size_t)ops_[i]];
  }
  ++steps_;
}

}  // namespace tessera::vulkan
