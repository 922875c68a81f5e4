#pragma once
// Hugging Face safetensors: an 8-byte little-endian header length N, N bytes
// of JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// optional "__metadata__": {string: string}}), then the tensors' bytes, with
// offsets relative to the end of the header. The header is checked whole
// before any tensor is handed out: its length, every entry's fields, each
// byte range inside the data section, sized as dtype × shape says, and no
// two ranges overlapping.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor.h"

namespace tessera {

// Headers above this are refused as corrupt (the safetensors library's own limit).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100ull << 20;

struct SafetensorsTensor {
  std::string name;
  std::string dtype;  // as the file spells it: "F32", "BF16", "I64", ...
  std::vector<int64_t> shape;  // outermost first
  uint64_t begin = 0, end = 0;  // within the data section
  std::span<const std::byte> data;
};

class SafetensorsFile {
 public:
  static Expected<SafetensorsFile> open(const std::string& path);
  // Parses `bytes`, which the caller keeps alive; `path` names them in messages.
  static Expected<SafetensorsFile> parse(std::span<const std::byte> bytes, const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // sorted by name
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Owns the bytes the tensors point into (null after parse()).
  const std::shared_ptr<const MappedFile>& mapping() const { return mapping_; }

 private:
  std::string path_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  std::shared_ptr<const MappedFile> mapping_;
};

// Bytes per element of a safetensors dtype name; 0 when the name is unknown.
uint32_t safetensors_dtype_bytes(std::string_view dtype);
// F32, F16 and BF16 as DType; unsupported naming the tensor and the accepted ones otherwise.
Expected<DType> safetensors_dtype(const SafetensorsTensor& t, const std::string& path);

}  // namespace tessera
