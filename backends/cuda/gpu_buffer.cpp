#include "backends/cuda/gpu_buffer.h"

#include "backends/cuda/gpu_status.h"

namespace tessera::gpu {

Expected<std::unique_ptr<GpuBuffer>> GpuBuffer::create(std::shared_ptr<GpuContext> ctx, uint64_t bytes, MemoryUse use) {
  std::unique_ptr<GpuBuffer> b(new GpuBuffer(ctx, bytes, use));
  if (bytes == 0) return b;
  TS_TRY(ctx->make_current());
  void* p = nullptr;
  if (use == MemoryUse::host_staging) {
    TS_GPU_TRY(gpuHostAlloc(&p, bytes));
  } else {
    // From the pool in the allocation stream's order; synchronized so that
    // any stream may use it at once.
    TS_GPU_TRY(gpuMallocAsync(&p, bytes, ctx->alloc_stream()));
    const gpuError_t e = gpuStreamSynchronize(ctx->alloc_stream());
    if (e != gpuSuccess) {
      (void)gpuFree(p);
      return gpu_failed("gpuStreamSynchronize(alloc_stream)", e);
    }
  }
  b->data_ = static_cast<std::byte*>(p);
  return b;
}

std::unique_ptr<GpuBuffer> GpuBuffer::view(const GpuBuffer& parent, uint64_t offset, uint64_t bytes, MemoryUse use) {
  std::unique_ptr<GpuBuffer> b(new GpuBuffer(parent.ctx_, bytes, use));
  b->data_ = parent.data_ ? parent.data_ + offset : nullptr;
  b->owns_ = false;
  return b;
}

GpuBuffer::~GpuBuffer() {
  if (!data_ || !owns_) return;
  (void)ctx_->make_current();
  // The HAL frees a buffer once nothing queued uses it, but that may be work
  // of any stream: the device is drained first (buffers go at model unload,
  // never per step).
  (void)gpuDeviceSynchronize();
  if (use_ == MemoryUse::host_staging) {
    (void)gpuFreeHost(data_);
  } else {
    (void)gpuFreeAsync(data_, ctx_->alloc_stream());
    (void)gpuStreamSynchronize(ctx_->alloc_stream());
  }
}

GpuBuffer* gpu_buffer(Buffer& b) { return dynamic_cast<GpuBuffer*>(&b); }

}  // namespace tessera::gpu
