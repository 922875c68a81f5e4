#pragma once
// An ordered queue of work on one device. Nothing here waits for earlier
// work unless it says so: a GPU stream returns as soon as the work is queued;
// the CPU stream runs each call's work before it returns, so its events
// complete in order, at their record. Work on one stream runs in the order it
// was given; across streams only Stream::wait orders it.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/hal/block_copy.h"
#include "core/hal/buffer.h"
#include "core/hal/event.h"
#include "core/hal/plan.h"
#include "core/status.h"

namespace tessera {

// A Plan compiled for one device: buffers allocated, kernels chosen,
// command buffers recorded. Replayed every step, never rebuilt.
class Executable {
 public:
  virtual ~Executable() = default;
  virtual const Plan& plan() const = 0;
  // The device buffer behind a plan buffer id.
  virtual Buffer& buffer(uint32_t id) = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  // Host to device, in stream order. `src` is taken (into pinned staging)
  // before the call returns, so the caller may reuse it at once; the copy into
  // `dst` happens after the stream's earlier work. May block while the
  // stream's staging is full of copies not yet done.
  virtual Status upload(Buffer& dst, uint64_t offset, std::span<const std::byte> src) = 0;
  // Device to host, in stream order. `dst` is written when the stream gets
  // there: read it only once an event recorded after this call has completed
  // (Event::synchronize) or after synchronize(); keep it alive until then.
  virtual Status download(std::span<std::byte> dst, Buffer& src, uint64_t offset) = 0;
  // Device to device, in stream order: buffers of this stream's device,
  // including its host_staging buffers (pinned host memory, so an upload or a
  // download through one is asynchronous with no extra host copy).
  virtual Status copy(Buffer& src, uint64_t src_offset, Buffer& dst, uint64_t dst_offset, uint64_t bytes) = 0;
  // Every listed block in every listed pool (core/hal/block_copy.h), as one
  // batch in stream order. A block index outside a pool is an error before
  // anything is copied.
  virtual Status copy_blocks(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) = 0;
  // Copies the step's arrays into one of the executable's step-input slots
  // (read before the call returns), checks them against the bucket (an error
  // names the field), and queues every dispatch.
  virtual Status run(Executable& exe, const StepArgs& args) = 0;
  // `e` completes when the work given to this stream so far has finished.
  virtual Status record(Event& e) = 0;
  // Later work on this stream starts after `e` completes. An event of the
  // same device is waited for on the device; one of another device (or
  // backend) by the host, before this call returns.
  virtual Status wait(Event& e) = 0;
  // The host waits for everything given to this stream, host copies included.
  virtual Status synchronize() = 0;
};

// Checks a copy's byte range against both buffers: what every backend refuses.
Status check_copy_range(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t bytes);
// Checks every block of a batched copy against its pools before any is copied.
Status check_block_copies(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks);

}  // namespace tessera
