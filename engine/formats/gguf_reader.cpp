// GGUF parsing and validation. Every read is bounds-checked against the
// mapping, and every count is bounded by the bytes left in the file before
// anything is allocated for it.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "engine/formats/gguf.h"

namespace tessera {

namespace {
constexpr uint64_t kHeaderBytes = 24;  // magic, version, tensor_count, kv_count
constexpr int kMaxArrayDepth = 8;
// The smallest encodings: a KV of an empty-named u8, a 1-D tensor info.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

std::string hex_bytes(const std::byte* p, size_t n) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, i ? " %02x" : "%02x", (unsigned)p[i]);
    s += buf;
  }
  return s;
}

std::string printable(const std::byte* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const char c = (char)p[i];
    s += (c >= 0x20 && c < 0x7f) ? c : '.';
  }
  return s;
}

std::string span_text(uint64_t offset, uint64_t bytes) {
  return "[offset " + std::to_string(offset) + ", " + std::to_string(bytes) + " bytes]";
}
}  // namespace

class GgufParser {
 public:
  GgufParser(GgufFile& f, std::span<const std::byte> bytes) : f_(f), b_(bytes) {}

  Status run() {
    TS_TRY(parse_header());
    TS_TRY(parse_kvs());
    TS_TRY(read_alignment());
    TS_TRY(parse_tensor_infos());
    return place_tensors();
  }

 private:
  uint64_t size() const { return b_.size(); }
  uint64_t left() const { return size() - pos_; }

  Status fail(const std::string& what) const { return invalid_argument(f_.path_ + ": " + what); }

  Status truncated(const std::string& what, uint64_t need) const {
    return fail(what + ": needs " + std::to_string(need) + " bytes at offset " + std::to_string(pos_) +
                " but the file ends at " + std::to_string(size()));
  }

  template <class T>
  Status read(T* out, const std::string& what) {
    if (left() < sizeof(T)) return truncated(what, sizeof(T));
    std::memcpy(out, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::ok();
  }

  Status read_string(std::string* out, const std::string& what) {
    uint64_t len = 0;
    TS_TRY(read(&len, what + ": string length"));
    if (len > left())
      return fail(what + ": string length " + std::to_string(len) + " at offset " + std::to_string(pos_ - 8) +
                  " runs past the end of the file (size " + std::to_string(size()) + ")");
    out->assign(reinterpret_cast<const char*>(b_.data() + pos_), (size_t)len);
    pos_ += len;
    return Status::ok();
  }

  Status read_type(GgufType* out, const std::string& what) {
    uint32_t id = 0;
    TS_TRY(read(&id, what + ": value type"));
    if (id >= kGgufTypeCount)
      return fail(what + ": value type " + std::to_string(id) + " at offset " + std::to_string(pos_ - 4) +
                  " is not a GGUF type (0..12)");
    *out = (GgufType)id;
    return Status::ok();
  }

  Status read_array(GgufArray* a, const std::string& what, int depth) {
    if (depth > kMaxArrayDepth) return fail(what + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    TS_TRY(read_type(&a->elem_type, what + ": array element"));
    TS_TRY(read(&a->count, what + ": array count"));
    const uint32_t scalar = gguf_scalar_bytes(a->elem_type);
    const uint64_t min_elem = scalar ? scalar : a->elem_type == GgufType::string ? 8 : 12;
    if (a->count > left() / min_elem)
      return fail(what + ": array count " + std::to_string(a->count) + " (" + std::string(name(a->elem_type)) +
                  ") at offset " + std::to_string(pos_ - 8) + " needs more than the " + std::to_string(left()) +
                  " bytes left in the file");
    if (scalar) {
      const uint64_t n = a->count * scalar;
      a->raw.assign(b_.data() + pos_, b_.data() + pos_ + n);
      pos_ += n;
    } else if (a->elem_type == GgufType::string) {
      a->strings.resize((size_t)a->count);
      for (uint64_t i = 0; i < a->count; ++i)
        TS_TRY(read_string(&a->strings[i], what + "[" + std::to_string(i) + "]"));
    } else {
      a->arrays.resize((size_t)a->count);
      for (uint64_t i = 0; i < a->count; ++i)
        TS_TRY(read_array(&a->arrays[i], what + "[" + std::to_string(i) + "]", depth + 1));
    }
    return Status::ok();
  }

  Status read_value(GgufValue* v, const std::string& what) {
    if (v->type == GgufType::string) return read_string(&v->str, what);
    if (v->type == GgufType::array) return read_array(&v->array, what, 1);
    const uint32_t n = gguf_scalar_bytes(v->type);
    if (left() < n) return truncated(what + ": " + std::string(name(v->type)) + " value", n);
    v->bits = 0;
    std::memcpy(&v->bits, b_.data() + pos_, n);
    pos_ += n;
    return Status::ok();
  }

  Status parse_header() {
    if (size() == 0) return fail("file is empty; expected a GGUF header (magic 'GGUF')");
    if (size() < 4)
      return fail("file is " + std::to_string(size()) + " bytes; a GGUF header needs " +
                  std::to_string(kHeaderBytes));
    if (std::memcmp(b_.data(), "GGUF", 4) != 0)
      return fail("magic is '" + printable(b_.data(), 4) + "' (" + hex_bytes(b_.data(), 4) +
                  "); expected 'GGUF' (47 47 55 46)");
    if (size() < kHeaderBytes)
      return fail("file is " + std::to_string(size()) + " bytes; the GGUF header (magic, version, tensor_count, "
                  "metadata_kv_count) needs " + std::to_string(kHeaderBytes));
    pos_ = 4;
    TS_TRY(read(&f_.version_, "version"));
    if (f_.version_ != 2 && f_.version_ != 3)
      return fail("version " + std::to_string(f_.version_) + " is not supported; expected 2 or 3");
    TS_TRY(read(&tensor_count_, "tensor_count"));
    TS_TRY(read(&kv_count_, "metadata_kv_count"));
    if (kv_count_ > left() / kMinKvBytes)
      return fail("metadata_kv_count " + std::to_string(kv_count_) + " cannot fit in the " +
                  std::to_string(left()) + " bytes after the header");
    if (tensor_count_ > left() / kMinTensorInfoBytes)
      return fail("tensor_count " + std::to_string(tensor_count_) + " cannot fit in the " +
                  std::to_string(left()) + " bytes after the header");
    return Status::ok();
  }

  Status parse_kvs() {
    f_.kvs_.reserve((size_t)kv_count_);
    for (uint64_t i = 0; i < kv_count_; ++i) {
      GgufKv kv;
      const std::string nth = "key #" + std::to_string(i);
      TS_TRY(read_string(&kv.key, nth + " name"));
      const std::string what = "key '" + kv.key + "'";
      if (kv.key.empty()) return fail(nth + " has an empty name");
      if (f_.kv_index_.count(kv.key)) return fail(what + " appears twice (" + nth + ")");
      TS_TRY(read_type(&kv.value.type, what));
      TS_TRY(read_value(&kv.value, what));
      f_.kv_index_.emplace(kv.key, f_.kvs_.size());
      f_.kvs_.push_back(std::move(kv));
    }
    return Status::ok();
  }

  Status read_alignment() {
    const GgufValue* v = f_.find("general.alignment");
    if (!v) return Status::ok();
    if (v->type != GgufType::u32)
      return fail("key 'general.alignment' is " + v->type_name() + "; expected u32");
    const uint64_t a = v->bits;
    if (a == 0 || (a & (a - 1)) != 0)
      return fail("key 'general.alignment' is " + std::to_string(a) + "; expected a power of two");
    f_.alignment_ = (uint32_t)a;
    return Status::ok();
  }

  Status parse_tensor_infos() {
    f_.tensors_.reserve((size_t)tensor_count_);
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      GgufTensorInfo t;
      const std::string nth = "tensor #" + std::to_string(i);
      TS_TRY(read_string(&t.name, nth + " name"));
      if (t.name.empty()) return fail(nth + " has an empty name");
      const std::string what = "tensor '" + t.name + "'";
      if (f_.tensor_index_.count(t.name)) return fail(what + " appears twice (" + nth + ")");
      uint32_t n_dims = 0;
      TS_TRY(read(&n_dims, what + ": n_dims"));
      if (n_dims < 1 || n_dims > (uint32_t)kMaxRank)
        return fail(what + ": n_dims " + std::to_string(n_dims) + "; expected 1.." + std::to_string(kMaxRank));
      t.shape.rank = (int)n_dims;
      int64_t numel = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        uint64_t ne = 0;
        TS_TRY(read(&ne, what + ": ne[" + std::to_string(d) + "]"));
        if (ne > (uint64_t)INT64_MAX || __builtin_mul_overflow(numel, (int64_t)ne, &numel))
          return fail(what + ": ne[" + std::to_string(d) + "] = " + std::to_string(ne) +
                      " makes the element count overflow 64 bits");
        t.shape[(int)(n_dims - 1 - d)] = (int64_t)ne;  // ne[] is innermost first
      }
      TS_TRY(read(&t.ggml_type, what + ": type"));
      const auto dtype = dtype_from_ggml(t.ggml_type);
      if (!dtype)
        return fail(what + ": ggml type " + ggml_type_label(t.ggml_type) + " is not supported (supported: " +
                    std::string(supported_ggml_types()) + ")");
      t.dtype = *dtype;
      TS_TRY(read(&t.offset, what + ": offset"));
      const auto& tr = traits(t.dtype);
      if (t.shape.last() % tr.block_elems != 0)
        return fail(what + ": row of " + std::to_string(t.shape.last()) + " elements is not a whole number of " +
                    std::string(tr.name) + " blocks (" + std::to_string(tr.block_elems) + " elements each)");
      if (__builtin_mul_overflow((uint64_t)numel / tr.block_elems, (uint64_t)tr.block_bytes, &t.bytes))
        return fail(what + ": size of " + t.shape.to_string() + " overflows 64 bits");
      f_.tensor_index_.emplace(t.name, f_.tensors_.size());
      f_.tensors_.push_back(std::move(t));
    }
    return Status::ok();
  }

  Status place_tensors() {
    const uint64_t a = f_.alignment_;
    f_.data_offset_ = (pos_ + a - 1) / a * a;
    if (f_.tensors_.empty()) return Status::ok();
    if (f_.data_offset_ > size())
      return fail("data section at offset " + std::to_string(f_.data_offset_) +
                  " starts past the end of the file (size " + std::to_string(size()) + ")");
    const uint64_t data_bytes = size() - f_.data_offset_;
    for (auto& t : f_.tensors_) {
      const std::string what = "tensor '" + t.name + "'";
      if (t.offset % a != 0)
        return fail(what + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                    std::to_string(a));
      if (t.offset > data_bytes || t.bytes > data_bytes - t.offset) {
        const uint64_t abs = t.offset > UINT64_MAX - f_.data_offset_ ? t.offset : f_.data_offset_ + t.offset;
        return fail(what + ": data " + span_text(abs, t.bytes) + " runs past the end of the file (size " +
                    std::to_string(size()) + ")");
      }
      t.data = b_.subspan((size_t)(f_.data_offset_ + t.offset), (size_t)t.bytes);
    }
    std::vector<const GgufTensorInfo*> by_offset;
    for (const auto& t : f_.tensors_) by_offset.push_back(&t);
    std::stable_sort(by_offset.begin(), by_offset.end(),
                     [](const auto* x, const auto* y) { return x->offset < y->offset; });
    const GgufTensorInfo* reach = nullptr;  // the tensor whose data ends furthest so far
    for (const auto* q : by_offset) {
      if (q->bytes == 0) continue;
      if (reach && reach->offset + reach->bytes > q->offset)
        return fail("tensors '" + reach->name + "' " + span_text(reach->offset, reach->bytes) + " and '" + q->name +
                    "' " + span_text(q->offset, q->bytes) + " overlap (offsets in the data section)");
      if (!reach || q->offset + q->bytes > reach->offset + reach->bytes) reach = q;
    }
    return Status::ok();
  }

  GgufFile& f_;
  std::span<const std::byte> b_;
  uint64_t pos_ = 0;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
};

Expected<GgufFile> GgufFile::parse(std::span<const std::byte> bytes, const std::string& path) {
  GgufFile f;
  f.path_ = path;
  GgufParser parser(f, bytes);
  TS_TRY(parser.run());
  return f;
}

Expected<GgufFile> GgufFile::open(const std::string& path) {
  TS_ASSIGN_OR_RETURN(MappedFile m, MappedFile::open(path));
  GgufFile f;
  f.path_ = path;
  auto mapping = std::make_shared<const MappedFile>(std::move(m));
  GgufParser parser(f, mapping->bytes());
  TS_TRY(parser.run());
  f.mapping_ = std::move(mapping);
  return f;
}

}  // namespace tessera
