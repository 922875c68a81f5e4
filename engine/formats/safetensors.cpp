#include "engine/formats/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace tessera {

namespace {
using json = nlohmann::json;

struct DtypeSize {
  std::string_view name;
  uint32_t bytes;
};
// Every dtype the safetensors library defines, so that a header naming any of
// them is validated by size even where the loader then refuses the type.
constexpr DtypeSize kDtypeSizes[] = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},   {"F8_E5M2", 1}, {"F8_E4M3", 1},
                                     {"I16", 2},  {"U16", 2}, {"F16", 2},  {"BF16", 2},    {"I32", 4},
                                     {"U32", 4},  {"F32", 4}, {"F64", 8},  {"I64", 8},     {"U64", 8}};

std::string range_text(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

class HeaderParser {
 public:
  HeaderParser(std::string path, std::span<const std::byte> data) : path_(std::move(path)), data_(data) {}

  Status fail(const std::string& what) const { return invalid_argument(path_ + ": " + what); }

  Status entry(const std::string& name, const json& e, SafetensorsTensor* t) {
    const std::string what = "tensor '" + name + "'";
    if (!e.is_object()) return fail(what + ": header entry is not an object; expected {dtype, shape, data_offsets}");
    t->name = name;
    const auto dtype = e.find("dtype");
    if (dtype == e.end() || !dtype->is_string()) return fail(what + ": 'dtype' is missing or not a string");
    t->dtype = dtype->get<std::string>();
    const uint32_t elem_bytes = safetensors_dtype_bytes(t->dtype);
    if (!elem_bytes) return fail(what + ": dtype '" + t->dtype + "' is not a safetensors dtype");
    const auto shape = e.find("shape");
    if (shape == e.end() || !shape->is_array()) return fail(what + ": 'shape' is missing or not an array");
    uint64_t numel = 1;
    for (const json& d : *shape) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t)INT64_MAX)
        return fail(what + ": shape " + d.dump() + " entry is not a non-negative integer");
      const uint64_t n = d.get<uint64_t>();
      if (__builtin_mul_overflow(numel, n, &numel)) return fail(what + ": shape's element count overflows 64 bits");
      t->shape.push_back((int64_t)n);
    }
    const auto offs = e.find("data_offsets");
    if (offs == e.end() || !offs->is_array() || offs->size() != 2 || !(*offs)[0].is_number_unsigned() ||
        !(*offs)[1].is_number_unsigned())
      return fail(what + ": 'data_offsets' is not [begin, end] of non-negative integers");
    t->begin = (*offs)[0].get<uint64_t>();
    t->end = (*offs)[1].get<uint64_t>();
    if (t->begin > t->end || t->end > data_.size())
      return fail(what + ": data_offsets " + range_text(t->begin, t->end) + " are not inside the data section of " +
                  std::to_string(data_.size()) + " bytes");
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(numel, (uint64_t)elem_bytes, &bytes) || bytes != t->end - t->begin)
      return fail(what + ": data_offsets " + range_text(t->begin, t->end) + " hold " +
                  std::to_string(t->end - t->begin) + " bytes; dtype " + t->dtype + " × shape " + shape->dump() +
                  " needs " + (bytes / elem_bytes == numel ? std::to_string(bytes) : std::string("more than 2^64")));
    t->data = data_.subspan((size_t)t->begin, (size_t)(t->end - t->begin));
    return Status::ok();
  }

  Status metadata(const json& m, std::map<std::string, std::string>* out) {
    if (!m.is_object()) return fail("'__metadata__' is not an object of strings");
    for (const auto& [k, v] : m.items()) {
      if (!v.is_string()) return fail("'__metadata__' key '" + k + "' is not a string");
      (*out)[k] = v.get<std::string>();
    }
    return Status::ok();
  }

  Status no_overlap(const std::vector<SafetensorsTensor>& tensors) const {
    std::vector<const SafetensorsTensor*> by_begin;
    for (const auto& t : tensors)
      if (t.end > t.begin) by_begin.push_back(&t);
    std::sort(by_begin.begin(), by_begin.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    for (size_t i = 1; i < by_begin.size(); ++i) {
      const SafetensorsTensor *a = by_begin[i - 1], *b = by_begin[i];
      if (a->end > b->begin)
        return fail("tensors '" + a->name + "' " + range_text(a->begin, a->end) + " and '" + b->name + "' " +
                    range_text(b->begin, b->end) + " overlap");
    }
    return Status::ok();
  }

 private:
  std::string path_;
  std::span<const std::byte> data_;
};
}  // namespace

uint32_t safetensors_dtype_bytes(std::string_view dtype) {
  for (const DtypeSize& d : kDtypeSizes)
    if (d.name == dtype) return d.bytes;
  return 0;
}

Expected<DType> safetensors_dtype(const SafetensorsTensor& t, const std::string& path) {
  if (t.dtype == "F32") return DType::f32;
  if (t.dtype == "F16") return DType::f16;
  if (t.dtype == "BF16") return DType::bf16;
  return unsupported(path + ": tensor '" + t.name + "': dtype " + t.dtype + " is not supported; expected F32, F16 or BF16");
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Expected<SafetensorsFile> SafetensorsFile::parse(std::span<const std::byte> bytes, const std::string& path) {
  if (bytes.size() < 8)
    return invalid_argument(path + ": file is " + std::to_string(bytes.size()) +
                            " bytes; a safetensors file starts with an 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);  // little-endian, as every host we build for
  if (header_len < 2 || header_len > kSafetensorsMaxHeaderBytes || header_len > bytes.size() - 8)
    return invalid_argument(path + ": header length " + std::to_string(header_len) + " is not within 2.." +
                            std::to_string(std::min<uint64_t>(kSafetensorsMaxHeaderBytes, bytes.size() - 8)) +
                            " (the file's size less 8, at most 100 MiB)");
  const char* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const json header = json::parse(text, text + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return invalid_argument(path + ": header is not a JSON object; expected {\"tensor name\": {dtype, shape, data_offsets}}");

  SafetensorsFile f;
  f.path_ = path;
  HeaderParser p(path, bytes.subspan(8 + (size_t)header_len));
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      TS_TRY(p.metadata(entry, &f.metadata_));
      continue;
    }
    SafetensorsTensor t;
    TS_TRY(p.entry(name, entry, &t));
    f.index_.emplace(name, f.tensors_.size());
    f.tensors_.push_back(std::move(t));
  }
  TS_TRY(p.no_overlap(f.tensors_));
  return f;
}

Expected<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  TS_ASSIGN_OR_RETURN(MappedFile m, MappedFile::open(path));
  auto mapping = std::make_shared<const MappedFile>(std::move(m));
  TS_ASSIGN_OR_RETURN(SafetensorsFile f, parse(mapping->bytes(), path));
  f.mapping_ = std::move(mapping);
  return f;
}

}  // namespace tessera
