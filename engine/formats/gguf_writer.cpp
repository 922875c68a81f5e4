#include "engine/formats/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tessera {

namespace {
class Bytes {
 public:
  Bytes() { out_.reserve(1 << 16); }
  template <class T>
  void put(const T& v) {
    put_raw(reinterpret_cast<const std::byte*>(&v), sizeof(T));
  }
  void put_raw(const std::byte* p, size_t n) {
    const size_t at = out_.size();
    out_.resize(at + n);
    if (n) std::memcpy(out_.data() + at, p, n);
  }
  void put_string(const std::string& s) {
    put((uint64_t)s.size());
    put_raw(reinterpret_cast<const std::byte*>(s.data()), s.size());
  }
  void put_array(const GgufArray& a) {
    put((uint32_t)a.elem_type);
    put(a.count);
    if (a.elem_type == GgufType::string) {
      for (const auto& s : a.strings) put_string(s);
    } else if (a.elem_type == GgufType::array) {
      for (const auto& x : a.arrays) put_array(x);
    } else {
      put_raw(a.raw.data(), a.raw.size());
    }
  }
  void put_value(const GgufValue& v) {
    if (v.type == GgufType::string) return put_string(v.str);
    if (v.type == GgufType::array) return put_array(v.array);
    put_raw(reinterpret_cast<const std::byte*>(&v.bits), gguf_scalar_bytes(v.type));
  }
  void pad_to(uint64_t alignment) { out_.resize((out_.size() + alignment - 1) / alignment * alignment); }
  const std::vector<std::byte>& bytes() const { return out_; }

 private:
  std::vector<std::byte> out_;
};

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& kv : kvs_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  kvs_.push_back({key, std::move(value)});
}

bool GgufWriter::remove(const std::string& key) {
  for (auto it = kvs_.begin(); it != kvs_.end(); ++it) {
    if (it->key == key) {
      kvs_.erase(it);
      return true;
    }
  }
  return false;
}

const GgufValue* GgufWriter::find(const std::string& key) const {
  for (const auto& kv : kvs_)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

Status GgufWriter::check_tensor(const std::string& name, DType dtype, const Shape& shape, size_t bytes) const {
  const std::string what = "GGUF writer: tensor '" + name + "'";
  if (name.empty()) return invalid_argument("GGUF writer: a tensor has an empty name");
  for (const auto& t : tensors_)
    if (t.name == name) return invalid_argument(what + " was added twice");
  if (shape.rank < 1 || shape.rank > kMaxRank)
    return invalid_argument(what + ": rank " + std::to_string(shape.rank) + "; expected 1..4");
  for (int i = 0; i < shape.rank; ++i)
    if (shape[i] < 0) return invalid_argument(what + ": shape " + shape.to_string() + " has a negative dimension");
  if (!is_whole_blocks(dtype, shape.last()))
    return invalid_argument(what + ": row of " + std::to_string(shape.last()) + " elements is not a whole number of " +
                            std::string(tessera::name(dtype)) + " blocks");
  const uint64_t expected = TensorDesc::contiguous(dtype, shape).bytes();
  if (bytes != expected)
    return invalid_argument(what + ": " + std::to_string(bytes) + " bytes given; " +
                            TensorDesc::contiguous(dtype, shape).to_string() + " needs " + std::to_string(expected));
  return Status::ok();
}

Status GgufWriter::add_tensor(const std::string& name, DType dtype, const Shape& shape,
                              std::span<const std::byte> data) {
  TS_TRY(check_tensor(name, dtype, shape, data.size()));
  tensors_.push_back({name, dtype, shape, data, nullptr});
  return Status::ok();
}

Status GgufWriter::add_tensor(const std::string& name, DType dtype, const Shape& shape, std::vector<std::byte> data) {
  TS_TRY(check_tensor(name, dtype, shape, data.size()));
  auto owned = std::make_shared<const std::vector<std::byte>>(std::move(data));
  tensors_.push_back({name, dtype, shape, std::span<const std::byte>(*owned), owned});
  return Status::ok();
}

Expected<uint32_t> GgufWriter::alignment() const {
  const GgufValue* v = find("general.alignment");
  if (!v) return kGgufDefaultAlignment;
  if (v->type != GgufType::u32 || v->bits == 0 || (v->bits & (v->bits - 1)) != 0)
    return invalid_argument("GGUF writer: key 'general.alignment' is " + v->type_name() + " " +
                            v->to_display_string() + "; expected a u32 power of two");
  return (uint32_t)v->bits;
}

Status GgufWriter::write(const std::string& path) const {
  TS_ASSIGN_OR_RETURN(const uint32_t align, alignment());
  // A TensorDesc size of an empty shape is not 0 bytes; the file stores none.
  auto stored_bytes = [](const Tensor& t) { return (uint64_t)t.data.size(); };
  Bytes head;
  head.put((uint32_t)0x46554747);  // "GGUF" little-endian
  head.put((uint32_t)3);
  head.put((uint64_t)tensors_.size());
  head.put((uint64_t)kvs_.size());
  for (const auto& kv : kvs_) {
    head.put_string(kv.key);
    head.put((uint32_t)kv.value.type);
    head.put_value(kv.value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    head.put_string(t.name);
    head.put((uint32_t)t.shape.rank);
    for (int d = t.shape.rank - 1; d >= 0; --d) head.put((uint64_t)t.shape[d]);
    head.put(ggml_type_of(t.dtype));
    head.put(offset);
    offset = align_up(offset + stored_bytes(t), align);
  }
  head.pad_to(align);

  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return io_error(path + ": cannot create: " + std::strerror(errno));
  static const std::byte kZeros[256] = {};
  bool ok = std::fwrite(head.bytes().data(), 1, head.bytes().size(), f) == head.bytes().size();
  for (const auto& t : tensors_) {
    if (!ok) break;
    const uint64_t n = stored_bytes(t);
    ok = n == 0 || std::fwrite(t.data.data(), 1, (size_t)n, f) == n;
    for (uint64_t pad = align_up(n, align) - n; ok && pad > 0;) {
      const size_t chunk = pad < sizeof kZeros ? (size_t)pad : sizeof kZeros;
      ok = std::fwrite(kZeros, 1, chunk, f) == chunk;
      pad -= chunk;
    }
  }
  const int err = errno;
  if (std::fclose(f) != 0) ok = false;
  if (!ok) {
    std::remove(path.c_str());
    return io_error(path + ": write failed: " + std::strerror(err));
  }
  return Status::ok();
}

GgufWriter gguf_writer_from(const GgufFile& file) {
  GgufWriter w;
  for (const auto& kv : file.kvs()) w.set(kv.key, kv.value);
  for (const auto& t : file.tensors()) {
    // The file validated these, so the checks hold.
    const Status s = w.add_tensor(t.name, t.dtype, t.shape, t.data);
    (void)s;
  }
  return w;
}

}  // namespace tessera
