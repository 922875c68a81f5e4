#pragma once
// Device memory from the stream-ordered pool (weights, arena, KV pools, step
// inputs), or pinned host memory (host_staging, which the device reads and
// writes through unified addressing).
#include <memory>

#include "backends/cuda/gpu_context.h"
#include "core/hal/buffer.h"

namespace tessera::gpu {

class GpuBuffer final : public Buffer {
 public:
  static Expected<std::unique_ptr<GpuBuffer>> create(std::shared_ptr<GpuContext> ctx, uint64_t bytes, MemoryUse use);
  // Bytes [offset, offset + bytes) of `parent`, which must outlive it.
  static std::unique_ptr<GpuBuffer> view(const GpuBuffer& parent, uint64_t offset, uint64_t bytes, MemoryUse use);
  ~GpuBuffer() override;
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;

  uint64_t size() const override { return size_; }
  MemoryUse use() const override { return use_; }
  std::byte* host_data() override { return use_ == MemoryUse::host_staging ? data_ : nullptr; }

  // The address kernels and copies use (device memory, or the pinned host
  // address of a staging buffer); null for an empty buffer.
  std::byte* data() const { return data_; }
  const GpuContext& context() const { return *ctx_; }

 private:
  GpuBuffer(std::shared_ptr<GpuContext> ctx, uint64_t bytes, MemoryUse use) : ctx_(std::move(ctx)), size_(bytes), use_(use) {}
  std::shared_ptr<GpuContext> ctx_;
  uint64_t size_;
  MemoryUse use_;
  std::byte* data_ = nullptr;
  bool owns_ = true;
};

// The GpuBuffer behind a HAL buffer of this backend, or null for another's.
GpuBuffer* gpu_buffer(Buffer& b);

}  // namespace tessera::gpu
