#include "backends/cuda/gpu_stream.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "backends/cuda/gpu_executable.h"
#include "backends/cuda/gpu_status.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu {

Expected<std::unique_ptr<GpuEvent>> GpuEvent::create(std::shared_ptr<GpuContext> ctx) {
  std::unique_ptr<GpuEvent> e(new GpuEvent(ctx));
  TS_TRY(ctx->make_current());
  TS_GPU_TRY(gpuEventCreateWithFlags(&e->event_, gpuEventDisableTiming));
  return e;
}

GpuEvent::~GpuEvent() {
  if (!event_) return;
  (void)ctx_->make_current();
  (void)gpuEventDestroy(event_);
}

bool GpuEvent::query() {
  if (!recorded_) return true;
  (void)ctx_->make_current();
  return gpuEventQuery(event_) != gpuErrorNotReady;
}

Status GpuEvent::synchronize() {
  if (!recorded_) return Status::ok();
  TS_TRY(ctx_->make_current());
  TS_GPU_TRY(gpuEventSynchronize(event_));
  return Status::ok();
}

Expected<std::unique_ptr<GpuStream>> GpuStream::create(std::shared_ptr<GpuContext> ctx) {
  std::unique_ptr<GpuStream> s(new GpuStream(ctx));
  TS_TRY(ctx->make_current());
  TS_GPU_TRY(gpuStreamCreateWithFlags(&s->stream_, gpuStreamNonBlocking));
  for (StagingSlot& slot : s->ring_) {
    TS_ASSIGN_OR_RETURN(slot.memory, GpuBuffer::create(ctx, kSlotBytes, MemoryUse::host_staging));
    TS_GPU_TRY(gpuEventCreateWithFlags(&slot.copied, gpuEventDisableTiming));
  }
  return s;
}

GpuStream::~GpuStream() {
  (void)ctx_->make_current();
  if (stream_) (void)gpuStreamSynchronize(stream_);
  for (StagingSlot& slot : ring_)
    if (slot.copied) (void)gpuEventDestroy(slot.copied);
  if (stream_) (void)gpuStreamDestroy(stream_);
}

GpuBuffer* GpuStream::ours(Buffer& b, const char* what, Status& why) {
  GpuBuffer* g = gpu_buffer(b);
  if (!g || g->context().ordinal() != ctx_->ordinal())
    why = invalid_argument(std::string(TESSERA_GPU_BACKEND ": ") + what + " is not a buffer of " + TESSERA_GPU_BACKEND + ":" +
                           std::to_string(ctx_->ordinal()));
  return g;
}

// Each piece of up to a slot: the next slot once its last use is done, the
// leg's copies into or out of it queued, then the event that frees it again.
template <typename Leg>
Status GpuStream::through_ring(uint64_t bytes, Leg&& leg) {
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min<uint64_t>(kSlotBytes, bytes - done);
    StagingSlot& slot = ring_[(size_t)next_];
    next_ = (next_ + 1) % kSlots;
    if (slot.pending) TS_GPU_TRY(gpuEventSynchronize(slot.copied));
    slot.pending = false;
    TS_TRY(leg(slot.memory->data(), done, n));
    TS_GPU_TRY(gpuEventRecord(slot.copied, stream_));
    slot.pending = true;
    done += n;
  }
  return Status::ok();
}

Status GpuStream::upload(Buffer& dst, uint64_t offset, std::span<const std::byte> src) {
  Status why;
  GpuBuffer* d = ours(dst, "upload destination", why);
  if (!d) return why;
  if (offset > d->size() || src.size() > d->size() - offset)
    return out_of_range("upload of " + std::to_string(src.size()) + " bytes at offset " + std::to_string(offset) +
                        " overruns a buffer of " + std::to_string(d->size()));
  TS_TRY(ctx_->make_current());
  return through_ring(src.size(), [&](std::byte* slot, uint64_t done, uint64_t n) -> Status {
    std::memcpy(slot, src.data() + done, n);
    TS_GPU_TRY(gpuMemcpyAsync(d->data() + offset + done, slot, n, gpuMemcpyDefault, stream_));
    return Status::ok();
  });
}

namespace {

// A download's last leg, run by the runtime in stream order once the device
// copy into the pinned slot is done: pinned slot to the caller's memory.
struct HostCopy {
  std::byte* dst;
  const std::byte* src;
  uint64_t bytes;
};

void run_host_copy(void* p) {
  auto* c = static_cast<HostCopy*>(p);
  std::memcpy(c->dst, c->src, c->bytes);
  delete c;
}

#if defined(TESSERA_GPU_HIP)
// ROCm 5.2 declares hipLaunchHostFunc but its library does not export it;
// the older stream callback does the same in stream order.
void host_copy_callback(hipStream_t, hipError_t, void* p) { run_host_copy(p); }
gpuError_t queue_host_copy(gpuStream_t s, HostCopy* c) { return hipStreamAddCallback(s, host_copy_callback, c, 0); }
constexpr const char* kQueueHostCopy = "hipStreamAddCallback";
#else
gpuError_t queue_host_copy(gpuStream_t s, HostCopy* c) { return cudaLaunchHostFunc(s, run_host_copy, c); }
constexpr const char* kQueueHostCopy = "cudaLaunchHostFunc";
#endif

}  // namespace

Status GpuStream::download(std::span<std::byte> dst, Buffer& src, uint64_t offset) {
  Status why;
  GpuBuffer* s = ours(src, "download source", why);
  if (!s) return why;
  if (offset > s->size() || dst.size() > s->size() - offset)
    return out_of_range("download of " + std::to_string(dst.size()) + " bytes at offset " + std::to_string(offset) +
                        " overruns a buffer of " + std::to_string(s->size()));
  TS_TRY(ctx_->make_current());
  // Through the pinned ring, so that the call returns at once: the device
  // copies into a slot, then a host function queued behind it copies the
  // slot into `dst`; an event recorded after this call completes only once
  // that has run (stream order covers host functions), as the HAL asks.
  return through_ring(dst.size(), [&](std::byte* slot, uint64_t done, uint64_t n) -> Status {
    TS_GPU_TRY(gpuMemcpyAsync(slot, s->data() + offset + done, n, gpuMemcpyDefault, stream_));
    auto* job = new HostCopy{dst.data() + done, slot, n};
    if (const gpuError_t e = queue_host_copy(stream_, job); e != gpuSuccess) {
      delete job;
      return gpu_failed(kQueueHostCopy, e);
    }
    return Status::ok();  // the slot is free again once the host copy has run
  });
}

Status GpuStream::copy(Buffer& src, uint64_t src_offset, Buffer& dst, uint64_t dst_offset, uint64_t bytes) {
  Status why;
  GpuBuffer* s = ours(src, "copy source", why);
  if (!s) return why;
  GpuBuffer* d = ours(dst, "copy destination", why);
  if (!d) return why;
  TS_TRY(check_copy_range(src, src_offset, dst, dst_offset, bytes));
  if (bytes == 0) return Status::ok();
  TS_TRY(ctx_->make_current());
  TS_GPU_TRY(gpuMemcpyAsync(d->data() + dst_offset, s->data() + src_offset, bytes, gpuMemcpyDefault, stream_));
  return Status::ok();
}

namespace {

// Whether the copies may run at once: no buffer written by two pools or
// written by one and read by another; within a pool, no block both read and
// written (when source and destination are one buffer), none written twice.
bool copies_independent(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) {
  for (size_t i = 0; i < pools.size(); ++i)
    for (size_t j = 0; j < pools.size(); ++j)
      if (i != j && (pools[i].dst == pools[j].dst || pools[i].dst == pools[j].src)) return false;
  std::unordered_set<int32_t> written, read;
  for (const BlockCopy& b : blocks) {
    if (!written.insert(b.dst).second) return false;
    read.insert(b.src);
  }
  for (const KvPoolCopy& p : pools) {
    if (p.src != p.dst) continue;
    for (const BlockCopy& b : blocks)
      if (read.count(b.dst)) return false;
  }
  return true;
}

}  // namespace

Status GpuStream::copy_blocks(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) {
  TS_TRY(check_block_copies(pools, blocks));
  Status why;
  for (const KvPoolCopy& p : pools) {
    if (!ours(*p.src, "block copy source pool", why) || !ours(*p.dst, "block copy destination pool", why)) return why;
  }
  if (pools.empty() || blocks.empty()) return Status::ok();
  TS_TRY(ctx_->make_current());
  if (!copies_independent(pools, blocks)) {
    // Copies that depend on one another run in the order given, as on every backend.
    for (const KvPoolCopy& p : pools) {
      std::byte* from = gpu_buffer(*p.src)->data();
      std::byte* to = gpu_buffer(*p.dst)->data();
      for (const BlockCopy& b : blocks)
        TS_GPU_TRY(gpuMemcpyAsync(to + (uint64_t)b.dst * p.block_bytes, from + (uint64_t)b.src * p.block_bytes,
                                  p.block_bytes, gpuMemcpyDefault, stream_));
    }
    return Status::ok();
  }
  // One kernel for every pool: the pools' addresses and the block pairs
  // uploaded in one copy (stream order keeps the next call's upload behind
  // this kernel's reads), then one launch.
  using kernels::PoolBlockCopy;
  const uint64_t pool_bytes = pools.size() * sizeof(PoolBlockCopy);
  const uint64_t bytes = pool_bytes + blocks.size() * 2 * sizeof(int32_t);
  copy_list_host_.resize(bytes);
  auto* list = reinterpret_cast<PoolBlockCopy*>(copy_list_host_.data());
  for (size_t i = 0; i < pools.size(); ++i)
    list[i] = {gpu_buffer(*pools[i].src)->data(), gpu_buffer(*pools[i].dst)->data(), pools[i].block_bytes};
  auto* pairs = reinterpret_cast<int32_t*>(copy_list_host_.data() + pool_bytes);
  for (size_t i = 0; i < blocks.size(); ++i) pairs[2 * i] = blocks[i].src, pairs[2 * i + 1] = blocks[i].dst;
  if (!copy_list_ || copy_list_->size() < bytes) {
    TS_ASSIGN_OR_RETURN(copy_list_, GpuBuffer::create(ctx_, std::max<uint64_t>(bytes, 4096), MemoryUse::activations));
  }
  TS_TRY(upload(*copy_list_, 0, copy_list_host_));
  const kernels::CopyBlocksArgs a{reinterpret_cast<const PoolBlockCopy*>(copy_list_->data()), (int32_t)pools.size(),
                                  reinterpret_cast<const int32_t*>(copy_list_->data() + pool_bytes), (int32_t)blocks.size()};
  if (const gpuError_t e = kernels::copy_blocks(a, stream_); e != gpuSuccess) return gpu_failed("copy_blocks kernel launch", e);
  return Status::ok();
}

Status GpuStream::run(Executable& exe, const StepArgs& args) {
  auto* g = dynamic_cast<GpuExecutable*>(&exe);
  if (!g) return invalid_argument(std::string(TESSERA_GPU_BACKEND ": run: the executable was compiled for another device"));
  TS_TRY(ctx_->make_current());
  return g->run(args, *this);
}

Status GpuStream::record(Event& e) {
  auto* g = dynamic_cast<GpuEvent*>(&e);
  if (!g || g->context().ordinal() != ctx_->ordinal())
    return invalid_argument(std::string(TESSERA_GPU_BACKEND ": record: the event belongs to another device"));
  TS_TRY(ctx_->make_current());
  TS_GPU_TRY(gpuEventRecord(g->handle(), stream_));
  g->mark_recorded();
  return Status::ok();
}

Status GpuStream::wait(Event& e) {
  auto* g = dynamic_cast<GpuEvent*>(&e);
  // Another device's or backend's event: the host waits for it.
  if (!g || g->context().ordinal() != ctx_->ordinal()) return e.synchronize();
  if (!g->query()) {
    TS_TRY(ctx_->make_current());
    TS_GPU_TRY(gpuStreamWaitEvent(stream_, g->handle(), 0));
  }
  return Status::ok();
}

Status GpuStream::synchronize() {
  TS_TRY(ctx_->make_current());
  TS_GPU_TRY(gpuStreamSynchronize(stream_));
  return Status::ok();
}

}  // namespace tessera::gpu
