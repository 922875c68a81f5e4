#pragma once
// Host memory as a HAL buffer: either owned (64-byte aligned) or borrowed
// (weights kept in place from an mmap'd model file).
#include <cstdlib>
#include <cstring>

#include "core/hal/buffer.h"

namespace tessera::cpu {

class CpuBuffer final : public Buffer {
 public:
  static CpuBuffer* owned(uint64_t bytes, MemoryUse use) {
    const uint64_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded ? rounded : 64);
    if (!p) return nullptr;
    std::memset(p, 0, rounded ? rounded : 64);
    return new CpuBuffer(static_cast<std::byte*>(p), bytes, use, true);
  }
  static CpuBuffer* borrowed(const std::byte* p, uint64_t bytes, MemoryUse use) {
    return new CpuBuffer(const_cast<std::byte*>(p), bytes, use, false);
  }
  ~CpuBuffer() override {
    if (owned_) std::free(data_);
  }
  uint64_t size() const override { return size_; }
  MemoryUse use() const override { return use_; }
  std::byte* host_data() override { return data_; }

 private:
  CpuBuffer(std::byte* d, uint64_t n, MemoryUse u, bool owned) : data_(d), size_(n), use_(u), owned_(owned) {}
  std::byte* data_;
  uint64_t size_;
  MemoryUse use_;
  bool owned_;
};

}  // namespace tessera::cpu
