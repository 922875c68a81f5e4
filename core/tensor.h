#pragma once
// Tensor descriptors: dtype, shape (outermost dimension first, as numpy and
// PyTorch print it; GGUF lists ne[] innermost first and the loader flips it),
// byte strides, and views that share storage.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/dtype.h"

namespace tessera {

inline constexpr int kMaxRank = 4;

struct Shape {
  std::array<int64_t, kMaxRank> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);
  int64_t operator[](int i) const { return dims[(size_t)i]; }
  int64_t& operator[](int i) { return dims[(size_t)i]; }
  int64_t numel() const;
  int64_t last() const { return rank ? dims[(size_t)rank - 1] : 1; }
  bool operator==(const Shape& o) const;
  std::string to_string() const;  // "[4, 64]"
};

struct TensorDesc {
  DType dtype = DType::f32;
  Shape shape;
  // Byte distance between consecutive indices of each dimension. For
  // quantized types the innermost dimension is whole contiguous blocks and
  // its stride is 0 (elements are not individually addressable).
  std::array<int64_t, kMaxRank> strides{};

  static TensorDesc contiguous(DType dtype, Shape shape);
  bool is_contiguous() const;
  // Bytes from the first to one past the last element.
  uint64_t bytes() const;
  int64_t row_bytes() const { return (int64_t)bytes_for(dtype, shape.last()); }
  // rows = product of all but the innermost dimension.
  int64_t rows() const { return shape.rank ? shape.numel() / shape.last() : 1; }
  // Same storage, indices [begin, end) of dimension `dim`; returns the byte
  // offset of the view's first element through `offset_bytes`.
  TensorDesc slice(int dim, int64_t begin, int64_t end, int64_t* offset_bytes) const;
  std::string to_string() const;  // "f32[4, 64]"
};

// A descriptor over memory someone else owns.
struct TensorView {
  TensorDesc desc;
  std::byte* data = nullptr;

  template <class T>
  T* as() const { return reinterpret_cast<T*>(data); }
  std::byte* row(int64_t r) const { return data + r * desc.strides[(size_t)desc.shape.rank - 2]; }
};

}  // namespace tessera
