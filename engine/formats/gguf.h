#pragma once
// GGUF reader: mmaps a file, parses its header, metadata and tensor table,
// and validates every count, offset and size before anything is allocated
// or read. Versions 2 and 3 are accepted (they share one layout).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor.h"
#include "engine/formats/gguf_value.h"

namespace tessera {

inline constexpr uint32_t kGgufDefaultAlignment = 32;

struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  DType dtype = DType::f32;
  Shape shape;          // outermost first (GGUF's ne[] reversed)
  uint64_t offset = 0;  // from the start of the data section
  uint64_t bytes = 0;
  std::span<const std::byte> data;  // into the mapping
};

class GgufFile {
 public:
  static Expected<GgufFile> open(const std::string& path);
  // Parses `bytes`, which the caller keeps alive (mapping() is null); `path`
  // names them in messages. For bytes that never were a file (the fuzzer).
  static Expected<GgufFile> parse(std::span<const std::byte> bytes, const std::string& path);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute file offset of the data section
  // Every KV in file order.
  const std::vector<GgufKv>& kvs() const { return kvs_; }
  // Every tensor in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  // Owns the bytes that tensor spans point into.
  const std::shared_ptr<const MappedFile>& mapping() const { return mapping_; }

  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed getters: not_found when the key is absent, invalid_argument naming
  // the key, its type and the expected type when it has another type.
  Expected<uint64_t> get_uint(std::string_view key) const;  // any integer type, >= 0
  Expected<int64_t> get_int(std::string_view key) const;    // any integer type that fits
  Expected<double> get_float(std::string_view key) const;   // f32 or f64
  Expected<bool> get_bool(std::string_view key) const;
  Expected<std::string> get_string(std::string_view key) const;
  Expected<std::vector<std::string>> get_string_array(std::string_view key) const;
  Expected<std::vector<float>> get_f32_array(std::string_view key) const;
  Expected<std::vector<int32_t>> get_i32_array(std::string_view key) const;  // any integer array in i32 range

  // "path: key 'k' ..." for messages about a key.
  Status key_error(std::string_view key, const std::string& what) const;

 private:
  friend class GgufParser;
  Expected<const GgufValue*> require(std::string_view key) const;

  std::string path_;
  uint32_t version_ = 3;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::unordered_map<std::string, size_t> tensor_index_;
  std::shared_ptr<const MappedFile> mapping_;
};

}  // namespace tessera
