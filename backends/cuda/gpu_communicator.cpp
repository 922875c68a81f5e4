#include "backends/cuda/gpu_communicator.h"

#include <array>
#include <cstring>
#include <vector>

#include "backends/cuda/gpu_nccl.h"
#include "backends/cuda/gpu_status.h"
#include "backends/cuda/gpu_stream.h"

namespace tessera::gpu {

std::string GpuCommunicator::name() const { return TESSERA_GPU_COLLECTIVES; }

#if defined(TESSERA_GPU_NCCL)

namespace {

Expected<ncclDataType_t> nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i8: return ncclInt8;
    case DType::i32: return ncclInt32;
    default: break;
  }
  return unsupported(std::string(TESSERA_GPU_BACKEND ": " TESSERA_GPU_COLLECTIVES " collectives over ") + std::string(name(t)) +
                     " values (f32, f16, bf16, i8 and i32 only)");
}

}  // namespace

// `TS_NCCL_TRY("ncclFoo", api_->foo(...))` returns a Status naming ncclFoo unless it succeeded.
#define TS_NCCL_TRY(call, expr)                                        \
  do {                                                                 \
    const ncclResult_t ts_nccl_r_ = (expr);                            \
    if (ts_nccl_r_ != ncclSuccess) return nccl_failed(*api_, call, ts_nccl_r_, comm_); \
  } while (0)

Expected<std::shared_ptr<GpuCommunicator>> GpuCommunicator::create(std::shared_ptr<GpuContext> ctx, HostGroup& group) {
  const int rank = group.rank(), size = group.size();
  std::shared_ptr<GpuCommunicator> c(new GpuCommunicator(ctx));
  c->rank_ = rank;
  c->size_ = size;
  // What this rank can do alone: load the library, select its device, make its stream.
  Expected<const NcclApi*> api = nccl_api();
  Status local = api.has_value() ? ctx->make_current() : api.status();
  if (local.is_ok()) {
    c->api_ = *api;
    const gpuError_t e = gpuStreamCreateWithFlags(&c->own_stream_, gpuStreamNonBlocking);
    if (e != gpuSuccess) local = gpu_failed("gpuStreamCreateWithFlags", e);
  }
  // Rank 0's unique id behind a byte saying it has one. A rank that cannot
  // join still broadcasts and agrees below, so that no other rank waits for
  // it in ncclCommInitRank.
  std::array<std::byte, 1 + sizeof(ncclUniqueId)> message{};
  if (rank == 0 && local.is_ok()) {
    ncclUniqueId id;
    const ncclResult_t r = c->api_->get_unique_id(&id);
    if (r == ncclSuccess) {
      message[0] = std::byte{1};
      std::memcpy(message.data() + 1, &id, sizeof id);
    } else {
      local = nccl_failed(*c->api_, "ncclGetUniqueId", r, nullptr);
    }
  }
  TS_TRY(group.broadcast(message, 0));
  TS_ASSIGN_OR_RETURN(const int64_t every_rank_ready, group.min(local.is_ok() && message[0] == std::byte{1} ? 1 : 0));
  if (!local.is_ok()) return local;
  if (every_rank_ready == 0)
    return unsupported(std::string(TESSERA_GPU_BACKEND ": rank ") + std::to_string(rank) + ": " +
                       (message[0] == std::byte{1} ? "another rank" : "rank 0") +
                       " could not join the " TESSERA_GPU_COLLECTIVES " communicator (that rank's own error says why)");
#if defined(TESSERA_GPU_HIP)
  c->capturable_ = false;
#else
  c->capturable_ = c->api_->version >= 20900;  // NCCL 2.9: collectives in CUDA graphs
#endif
  ncclUniqueId id;
  std::memcpy(&id, message.data() + 1, sizeof id);
  ncclComm_t comm = nullptr;
  const ncclResult_t r = c->api_->comm_init_rank(&comm, size, id, rank);
  if (r != ncclSuccess) return nccl_failed(*c->api_, "ncclCommInitRank", r, nullptr);
  c->comm_ = comm;
  TS_TRY(c->warm_up());
  return c;
}

GpuCommunicator::~GpuCommunicator() {
  (void)ctx_->make_current();
  if (own_stream_) (void)gpuStreamSynchronize(own_stream_);
  if (comm_) (void)api_->comm_destroy(comm_);
  if (own_stream_) (void)gpuStreamDestroy(own_stream_);
}

// One collective of each kind NCCL may connect lazily (NCCL_RUNTIME_CONNECT),
// so that the first graph capture records collectives rather than making
// connections, and a communicator that cannot move data fails here.
Status GpuCommunicator::warm_up() {
  // Two floats to send, then room for every rank's (the unequal gather's rank 0 sends two).
  const size_t floats = 2 + (size_t)size_ + 1;
  void* p = nullptr;
  TS_GPU_TRY(gpuMalloc(&p, floats * 4));
  const Status s = [&]() -> Status {
    float* x = static_cast<float*>(p);
    TS_GPU_TRY(gpuMemsetAsync(x, 0, floats * 4, own_stream_));
    TS_TRY(all_reduce_sum_on(x, x, 1, DType::f32, own_stream_));
    std::vector<size_t> counts((size_t)size_, 1);
    TS_TRY(all_gather_on(x, x + 2, counts, DType::f32, own_stream_));
    counts[0] = 2;  // unequal: the grouped broadcasts
    TS_TRY(all_gather_on(x, x + 2, counts, DType::f32, own_stream_));
    return finish(own_stream_, true);
  }();
  (void)gpuStreamSynchronize(own_stream_);
  (void)gpuFree(p);
  return s;
}

Status GpuCommunicator::stream_for(Stream* s, gpuStream_t& out, bool& wait) const {
  TS_TRY(ctx_->make_current());
  if (!s) {
    out = own_stream_;
    wait = true;
    return Status::ok();
  }
  auto* g = dynamic_cast<GpuStream*>(s);
  if (!g || g->context().ordinal() != ctx_->ordinal())
    return invalid_argument(std::string(TESSERA_GPU_BACKEND ": " TESSERA_GPU_COLLECTIVES " communicator of device ") +
                            std::to_string(ctx_->ordinal()) + ": the stream belongs to another device");
  out = g->handle();
  wait = false;
  return Status::ok();
}

// A collective that failed on another rank, or in the network, surfaces as
// the communicator's asynchronous error once its work has finished.
Status GpuCommunicator::finish(gpuStream_t s, bool wait) const {
  if (!wait) return Status::ok();
  TS_GPU_TRY(gpuStreamSynchronize(s));
  ncclResult_t async = ncclSuccess;
  TS_NCCL_TRY("ncclCommGetAsyncError", api_->comm_get_async_error(comm_, &async));
  if (async != ncclSuccess && async != ncclInProgress)
    return nccl_failed(*api_, "a queued collective (ncclCommGetAsyncError)", async, comm_);
  return Status::ok();
}

Status GpuCommunicator::all_reduce_sum_on(const void* send, void* recv, size_t count, DType dtype, gpuStream_t stream) {
  TS_ASSIGN_OR_RETURN(const ncclDataType_t t, nccl_type(dtype));
  if (count == 0) return Status::ok();
  TS_NCCL_TRY("ncclAllReduce", api_->all_reduce(send, recv, count, t, ncclSum, comm_, stream));
  return Status::ok();
}

Status GpuCommunicator::all_gather_on(const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                                      gpuStream_t stream) {
  if (counts.size() != (size_t)size_)
    return invalid_argument(std::string(TESSERA_GPU_BACKEND ": all_gather: ") + std::to_string(counts.size()) +
                            " counts for a communicator of " + std::to_string(size_) + " ranks");
  TS_ASSIGN_OR_RETURN(const ncclDataType_t t, nccl_type(dtype));
  bool equal = true;
  for (size_t c : counts) equal = equal && c == counts[0];
  if (equal) {
    if (counts[0] == 0) return Status::ok();
    TS_NCCL_TRY("ncclAllGather", api_->all_gather(send, recv, counts[0], t, comm_, stream));
    return Status::ok();
  }
  // Each rank's block broadcast from it to its offset: one group, one launch.
  auto* out = static_cast<std::byte*>(recv);
  TS_NCCL_TRY("ncclGroupStart", api_->group_start());
  ncclResult_t first_error = ncclSuccess;
  uint64_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    const size_t n = counts[(size_t)r];
    if (n > 0 && first_error == ncclSuccess)
      first_error = api_->broadcast(r == rank_ ? send : out + offset, out + offset, n, t, r, comm_, stream);
    offset += bytes_for(dtype, (int64_t)n);
  }
  const ncclResult_t ended = api_->group_end();  // always, to close the group
  if (first_error != ncclSuccess) return nccl_failed(*api_, "ncclBroadcast (an all_gather's block)", first_error, comm_);
  TS_NCCL_TRY("ncclGroupEnd (an all_gather's broadcasts)", ended);
  return Status::ok();
}

Status GpuCommunicator::all_reduce_sum(void* data, size_t count, DType dtype, Stream* stream) {
  gpuStream_t s = nullptr;
  bool wait = false;
  TS_TRY(stream_for(stream, s, wait));
  TS_TRY(all_reduce_sum_on(data, data, count, dtype, s));
  return finish(s, wait);
}

Status GpuCommunicator::all_gather(const void* send, void* recv, std::span<const size_t> counts, DType dtype, Stream* stream) {
  gpuStream_t s = nullptr;
  bool wait = false;
  TS_TRY(stream_for(stream, s, wait));
  TS_TRY(all_gather_on(send, recv, counts, dtype, s));
  return finish(s, wait);
}

Status GpuCommunicator::send(const void* data, size_t bytes, int peer, Stream* stream) {
  if (peer < 0 || peer >= size_ || peer == rank_)
    return invalid_argument(std::string(TESSERA_GPU_BACKEND ": send: peer ") + std::to_string(peer) + " is not another rank of " +
                            std::to_string(size_));
  gpuStream_t s = nullptr;
  bool wait = false;
  TS_TRY(stream_for(stream, s, wait));
  if (bytes > 0) TS_NCCL_TRY("ncclSend", api_->send(data, bytes, ncclUint8, peer, comm_, s));
  return finish(s, wait);
}

Status GpuCommunicator::recv(void* data, size_t bytes, int peer, Stream* stream) {
  if (peer < 0 || peer >= size_ || peer == rank_)
    return invalid_argument(std::string(TESSERA_GPU_BACKEND ": recv: peer ") + std::to_string(peer) + " is not another rank of " +
                            std::to_string(size_));
  gpuStream_t s = nullptr;
  bool wait = false;
  TS_TRY(stream_for(stream, s, wait));
  if (bytes > 0) TS_NCCL_TRY("ncclRecv", api_->recv(data, bytes, ncclUint8, peer, comm_, s));
  return finish(s, wait);
}

#else  // built without NCCL/RCCL: no communicator is ever made

Expected<std::shared_ptr<GpuCommunicator>> GpuCommunicator::create(std::shared_ptr<GpuContext>, HostGroup&) {
  return unsupported(built_without_collectives());
}
GpuCommunicator::~GpuCommunicator() = default;
Status GpuCommunicator::all_reduce_sum(void*, size_t, DType, Stream*) { return unsupported(built_without_collectives()); }
Status GpuCommunicator::all_gather(const void*, void*, std::span<const size_t>, DType, Stream*) {
  return unsupported(built_without_collectives());
}
Status GpuCommunicator::send(const void*, size_t, int, Stream*) { return unsupported(built_without_collectives()); }
Status GpuCommunicator::recv(void*, size_t, int, Stream*) { return unsupported(built_without_collectives()); }
Status GpuCommunicator::all_reduce_sum_on(const void*, void*, size_t, DType, gpuStream_t) {
  return unsupported(built_without_collectives());
}
Status GpuCommunicator::all_gather_on(const void*, void*, std::span<const size_t>, DType, gpuStream_t) {
  return unsupported(built_without_collectives());
}
Status GpuCommunicator::stream_for(Stream*, gpuStream_t&, bool&) const { return unsupported(built_without_collectives()); }
Status GpuCommunicator::finish(gpuStream_t, bool) const { return unsupported(built_without_collectives()); }
Status GpuCommunicator::warm_up() { return unsupported(built_without_collectives()); }

#endif

}  // namespace tessera::gpu
