#pragma once
// GGUF v3 writer. KVs are written in the order they were first set; tensors
// in the order added, each at the next multiple of the alignment (32, or
// general.alignment when set), padded with zeros. Writing what GgufFile read
// from a file this writer made gives the same bytes.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "engine/formats/gguf.h"
#include "engine/formats/gguf_value.h"

namespace tessera {

class GgufWriter {
 public:
  // Replaces the value in place when the key exists, else appends it.
  void set(const std::string& key, GgufValue value);
  void set_u32(const std::string& key, uint32_t v) { set(key, GgufValue::of_u32(v)); }
  void set_i32(const std::string& key, int32_t v) { set(key, GgufValue::of_i32(v)); }
  void set_u64(const std::string& key, uint64_t v) { set(key, GgufValue::of_u64(v)); }
  void set_f32(const std::string& key, float v) { set(key, GgufValue::of_f32(v)); }
  void set_bool(const std::string& key, bool v) { set(key, GgufValue::of_bool(v)); }
  void set_string(const std::string& key, std::string v) { set(key, GgufValue::of_string(std::move(v))); }
  void set_string_array(const std::string& key, std::vector<std::string> v) {
    set(key, GgufValue::of_strings(std::move(v)));
  }
  void set_f32_array(const std::string& key, const std::vector<float>& v) { set(key, GgufValue::of_f32s(v)); }
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v) { set(key, GgufValue::of_i32s(v)); }
  bool remove(const std::string& key);
  const GgufValue* find(const std::string& key) const;

  // `data` must be exactly the bytes of a contiguous dtype[shape] tensor and
  // must stay alive until write() returns (the writer does not copy it).
  Status add_tensor(const std::string& name, DType dtype, const Shape& shape, std::span<const std::byte> data);
  // Same, with bytes the writer keeps.
  Status add_tensor(const std::string& name, DType dtype, const Shape& shape, std::vector<std::byte> data);

  Status write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    Shape shape;
    std::span<const std::byte> data;
    std::shared_ptr<const std::vector<std::byte>> owned;
  };
  Status check_tensor(const std::string& name, DType dtype, const Shape& shape, size_t bytes) const;
  Expected<uint32_t> alignment() const;

  std::vector<GgufKv> kvs_;
  std::vector<Tensor> tensors_;
};

// A writer holding every KV and tensor of `file`, in file order; its tensor
// data spans point into `file`'s mapping, so `file` must outlive the writer.
GgufWriter gguf_writer_from(const GgufFile& file);

}  // namespace tessera
