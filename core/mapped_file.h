#pragma once
// A read-only memory map of a whole file. Move-only; unmaps on destruction.
// An empty file maps to an empty span (mmap refuses length 0).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace tessera {

class MappedFile {
 public:
  // io_error naming the path and the OS's reason (strerror) when the file
  // cannot be opened, is not a regular file, or cannot be mapped.
  static Expected<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  const std::byte* data() const { return static_cast<const std::byte*>(addr_); }
  std::span<const std::byte> bytes() const { return {data(), (size_t)size_}; }
  // Drops this process's pages wholly inside `range` (clipped to the map),
  // for bytes a reader has copied elsewhere: they stay in the page cache and
  // come back from the file if read again, but no longer count in this
  // process's resident memory. False when the range is not in this map.
  bool release(std::span<const std::byte> range) const;

 private:
  void reset();

  std::string path_;
  void* addr_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace tessera
