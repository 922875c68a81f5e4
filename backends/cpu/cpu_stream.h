#pragma once
// The CPU's stream: every call does its work before it returns (kernels on
// the device's thread pool, copies by memcpy), so work is in order by
// construction, an event is complete as soon as it is recorded, and waiting
// on another device's event is a host wait at the call.
#include "core/hal/device.h"

namespace tessera::cpu {

class CpuEvent final : public Event {
 public:
  bool query() override { return true; }
  Status synchronize() override { return Status::ok(); }
};

class CpuStream final : public Stream {
 public:
  Status upload(Buffer& dst, uint64_t offset, std::span<const std::byte> src) override;
  Status download(std::span<std::byte> dst, Buffer& src, uint64_t offset) override;
  Status copy(Buffer& src, uint64_t src_offset, Buffer& dst, uint64_t dst_offset, uint64_t bytes) override;
  Status copy_blocks(std::span<const KvPoolCopy> pools, std::span<const BlockCopy> blocks) override;
  Status run(Executable& exe, const StepArgs& args) override;
  Status record(Event& e) override;
  Status wait(Event& e) override;
  Status synchronize() override { return Status::ok(); }
};

}  // namespace tessera::cpu
