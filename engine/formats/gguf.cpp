// GgufFile lookups and typed getters (parsing is in gguf_reader.cpp).
#include <cstring>
#include <limits>

#include "engine/formats/gguf.h"

namespace tessera {

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Status GgufFile::key_error(std::string_view key, const std::string& what) const {
  return invalid_argument(path_ + ": key '" + std::string(key) + "' " + what);
}

Expected<const GgufValue*> GgufFile::require(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return not_found(path_ + ": key '" + std::string(key) + "' is missing");
  return v;
}

namespace {
std::string is_a(const GgufValue& v) { return "is " + v.type_name(); }
}  // namespace

Expected<uint64_t> GgufFile::get_uint(std::string_view key) const {
  TS_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (!gguf_is_integer(v->type)) return key_error(key, is_a(*v) + "; expected an unsigned integer");
  if (v->type != GgufType::u64 && v->as_i64() < 0)
    return key_error(key, "is " + std::to_string(v->as_i64()) + "; expected a non-negative integer");
  return v->type == GgufType::u64 ? v->bits : (uint64_t)v->as_i64();
}

Expected<int64_t> GgufFile::get_int(std::string_view key) const {
  TS_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (!gguf_is_integer(v->type)) return key_error(key, is_a(*v) + "; expected an integer");
  if (v->type == GgufType::u64 && v->bits > (uint64_t)std::numeric_limits<int64_t>::max())
    return key_error(key, "is " + std::to_string(v->bits) + "; expected at most 2^63-1");
  return v->as_i64();
}

Expected<double> GgufFile::get_float(std::string_view key) const {
  TS_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (v->type != GgufType::f32 && v->type != GgufType::f64) return key_error(key, is_a(*v) + "; expected f32");
  return v->as_f64();
}

Expected<bool> GgufFile::get_bool(std::string_view key) const {
  TS_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (v->type != GgufType::boolean) return key_error(key, is_a(*v) + "; expected bool");
  return v->bits != 0;
}

Expected<std::string> GgufFile::get_string(std::string_view key) const {
  TS_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (v->type != GgufType::string) return key_error(key, is_a(*v) + "; expected string");
  return v->str;
}

Expected<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  TS_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (v->type != GgufType::array || v->array.elem_type != GgufType::string)
    return key_error(key, is_a(*v) + "; expected array<string>");
  return v->array.strings;
}

Expected<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  TS_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  if (v->type != GgufType::array || v->array.elem_type != GgufType::f32)
    return key_error(key, is_a(*v) + "; expected array<f32>");
  std::vector<float> out((size_t)v->array.count);
  if (!out.empty()) std::memcpy(out.data(), v->array.raw.data(), out.size() * sizeof(float));
  return out;
}

Expected<std::vector<int32_t>> GgufFile::get_i32_array(std::string_view key) const {
  TS_ASSIGN_OR_RETURN(const GgufValue* v, require(key));
  const GgufArray& a = v->array;
  if (v->type != GgufType::array || !gguf_is_integer(a.elem_type))
    return key_error(key, is_a(*v) + "; expected array<i32>");
  std::vector<int32_t> out((size_t)a.count);
  const uint32_t n = gguf_scalar_bytes(a.elem_type);
  GgufValue e;
  e.type = a.elem_type;
  for (uint64_t i = 0; i < a.count; ++i) {
    e.bits = 0;
    std::memcpy(&e.bits, a.raw.data() + i * n, n);
    const int64_t x = e.as_i64();
    const bool big_u64 = a.elem_type == GgufType::u64 && e.bits > (uint64_t)INT32_MAX;
    if (big_u64 || x < INT32_MIN || x > INT32_MAX)
      return key_error(key, "element " + std::to_string(i) + " does not fit in i32");
    out[i] = (int32_t)x;
  }
  return out;
}

}  // namespace tessera
