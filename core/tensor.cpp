#include "core/tensor.h"

#include <cassert>

namespace tessera {

Shape::Shape(std::initializer_list<int64_t> d) {
  assert(d.size() <= (size_t)kMaxRank);
  for (int64_t v : d) dims[(size_t)rank++] = v;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[(size_t)i];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[(size_t)i] != o.dims[(size_t)i]) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[(size_t)i]);
  }
  return s + "]";
}

TensorDesc TensorDesc::contiguous(DType dtype, Shape shape) {
  TensorDesc t;
  t.dtype = dtype;
  t.shape = shape;
  if (shape.rank == 0) return t;
  const auto& tr = traits(dtype);
  int64_t stride = tr.quantized ? 0 : (int64_t)tr.block_bytes;
  t.strides[(size_t)shape.rank - 1] = stride;
  int64_t next = (int64_t)bytes_for(dtype, shape.last());
  for (int i = shape.rank - 2; i >= 0; --i) {
    t.strides[(size_t)i] = next;
    next *= shape[i];
  }
  return t;
}

bool TensorDesc::is_contiguous() const {
  const TensorDesc c = contiguous(dtype, shape);
  for (int i = 0; i < shape.rank; ++i)
    if (shape[i] > 1 && c.strides[(size_t)i] != strides[(size_t)i]) return false;
  return true;
}

uint64_t TensorDesc::bytes() const {
  if (shape.rank == 0) return traits(dtype).block_bytes;
  if (shape.numel() == 0) return 0;
  uint64_t end = bytes_for(dtype, shape.last());
  for (int i = 0; i < shape.rank - 1; ++i) end += (uint64_t)(shape[i] - 1) * (uint64_t)strides[(size_t)i];
  return end;
}

TensorDesc TensorDesc::slice(int dim, int64_t begin, int64_t end, int64_t* offset_bytes) const {
  assert(dim >= 0 && dim < shape.rank && begin >= 0 && begin <= end && end <= shape[dim]);
  TensorDesc v = *this;
  v.shape[dim] = end - begin;
  const bool inner_quant = dim == shape.rank - 1 && traits(dtype).quantized;
  if (inner_quant) {
    assert(is_whole_blocks(dtype, begin) && is_whole_blocks(dtype, end));
    *offset_bytes = (int64_t)bytes_for(dtype, begin);
  } else {
    *offset_bytes = begin * strides[(size_t)dim];
  }
  return v;
}

std::string TensorDesc::to_string() const { return std::string(name(dtype)) + shape.to_string(); }

}  // namespace tessera
