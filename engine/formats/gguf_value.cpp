#include "engine/formats/gguf_value.h"

#include <array>
#include <bit>
#include <charconv>
#include <cstring>

namespace tessera {

static_assert(std::endian::native == std::endian::little, "GGUF values are kept as little-endian bits");

namespace {
constexpr std::array<std::string_view, kGgufTypeCount> kNames = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
constexpr std::array<uint32_t, kGgufTypeCount> kBytes = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

GgufValue scalar(GgufType t, uint64_t bits) {
  GgufValue v;
  v.type = t;
  v.bits = bits;
  return v;
}

int64_t sign_extend(uint64_t bits, uint32_t bytes) {
  const int shift = 64 - 8 * (int)bytes;
  return (int64_t)(bits << shift) >> shift;
}

uint64_t element_bits(const GgufArray& a, uint64_t i) {
  const uint32_t n = gguf_scalar_bytes(a.elem_type);
  uint64_t bits = 0;
  std::memcpy(&bits, a.raw.data() + i * n, n);
  return bits;
}

std::string number_string(GgufType t, uint64_t bits) {
  char buf[64];
  std::to_chars_result r{};
  switch (t) {
    case GgufType::f32: {
      float f;
      const uint32_t u = (uint32_t)bits;
      std::memcpy(&f, &u, 4);
      r = std::to_chars(buf, buf + sizeof buf, f);
      break;
    }
    case GgufType::f64: {
      double d;
      std::memcpy(&d, &bits, 8);
      r = std::to_chars(buf, buf + sizeof buf, d);
      break;
    }
    case GgufType::boolean: return bits ? "true" : "false";
    case GgufType::i8: case GgufType::i16: case GgufType::i32: case GgufType::i64:
      r = std::to_chars(buf, buf + sizeof buf, sign_extend(bits, gguf_scalar_bytes(t)));
      break;
    default: r = std::to_chars(buf, buf + sizeof buf, bits); break;
  }
  return std::string(buf, r.ptr);
}

std::string cut(const std::string& s) {
  constexpr size_t kMax = 120;
  return s.size() <= kMax ? s : s.substr(0, kMax) + "...";
}

std::string array_type_name(const GgufArray& a) {
  std::string inner = a.elem_type == GgufType::array
                          ? (a.arrays.empty() ? std::string("array") : array_type_name(a.arrays[0]))
                          : std::string(name(a.elem_type));
  return "array<" + inner + ">";
}

std::string array_display(const GgufArray& a) {
  constexpr uint64_t kListed = 8;
  if (a.count > kListed) return array_type_name(a) + "[" + std::to_string(a.count) + "]";
  std::string s = "[";
  for (uint64_t i = 0; i < a.count; ++i) {
    if (i) s += ", ";
    if (a.elem_type == GgufType::string) {
      s += '"';
      s += cut(a.strings[i]);
      s += '"';
    }
    else if (a.elem_type == GgufType::array) s += array_display(a.arrays[i]);
    else s += number_string(a.elem_type, element_bits(a, i));
  }
  return s + "]";
}

template <class T>
GgufArray packed(GgufType t, const std::vector<T>& v) {
  GgufArray a;
  a.elem_type = t;
  a.count = v.size();
  a.raw.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(a.raw.data(), v.data(), a.raw.size());
  return a;
}
}  // namespace

std::string_view name(GgufType t) {
  const auto i = (uint32_t)t;
  return i < kGgufTypeCount ? kNames[i] : std::string_view("unknown");
}

uint32_t gguf_scalar_bytes(GgufType t) {
  const auto i = (uint32_t)t;
  return i < kGgufTypeCount ? kBytes[i] : 0;
}

bool gguf_is_integer(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::u16: case GgufType::i16:
    case GgufType::u32: case GgufType::i32: case GgufType::u64: case GgufType::i64: return true;
    default: return false;
  }
}

GgufValue GgufValue::of_u32(uint32_t v) { return scalar(GgufType::u32, v); }
GgufValue GgufValue::of_i32(int32_t v) { return scalar(GgufType::i32, (uint32_t)v); }
GgufValue GgufValue::of_u64(uint64_t v) { return scalar(GgufType::u64, v); }
GgufValue GgufValue::of_i64(int64_t v) { return scalar(GgufType::i64, (uint64_t)v); }
GgufValue GgufValue::of_f32(float v) { return scalar(GgufType::f32, std::bit_cast<uint32_t>(v)); }
GgufValue GgufValue::of_f64(double v) { return scalar(GgufType::f64, std::bit_cast<uint64_t>(v)); }
GgufValue GgufValue::of_bool(bool v) { return scalar(GgufType::boolean, v ? 1 : 0); }

GgufValue GgufValue::of_string(std::string v) {
  GgufValue g;
  g.type = GgufType::string;
  g.str = std::move(v);
  return g;
}

GgufValue GgufValue::of_strings(std::vector<std::string> v) {
  GgufValue g;
  g.type = GgufType::array;
  g.array.elem_type = GgufType::string;
  g.array.count = v.size();
  g.array.strings = std::move(v);
  return g;
}

GgufValue GgufValue::of_f32s(const std::vector<float>& v) {
  GgufValue g;
  g.type = GgufType::array;
  g.array = packed(GgufType::f32, v);
  return g;
}

GgufValue GgufValue::of_i32s(const std::vector<int32_t>& v) {
  GgufValue g;
  g.type = GgufType::array;
  g.array = packed(GgufType::i32, v);
  return g;
}

int64_t GgufValue::as_i64() const {
  switch (type) {
    case GgufType::i8: case GgufType::i16: case GgufType::i32: case GgufType::i64:
      return sign_extend(bits, gguf_scalar_bytes(type));
    default: return (int64_t)bits;
  }
}

uint64_t GgufValue::as_u64() const { return (uint64_t)as_i64(); }

double GgufValue::as_f64() const {
  if (type == GgufType::f32) return std::bit_cast<float>((uint32_t)bits);
  return std::bit_cast<double>(bits);
}

std::string GgufValue::to_display_string() const {
  if (type == GgufType::string) return cut(str);
  if (type == GgufType::array) return array_display(array);
  return number_string(type, bits);
}

std::string GgufValue::type_name() const {
  return type == GgufType::array ? array_type_name(array) : std::string(name(type));
}

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  switch (ggml_type) {
    case 0: return DType::f32;
    case 1: return DType::f16;
    case 2: return DType::q4_0;
    case 8: return DType::q8_0;
    case 3: return DType::q4_1;
    case 6: return DType::q5_0;
    case 7: return DType::q5_1;
    case 10: return DType::q2_K;
    case 11: return DType::q3_K;
    case 12: return DType::q4_K;
    case 13: return DType::q5_K;
    case 14: return DType::q6_K;
    case 20: return DType::iq4_nl;
    case 23: return DType::iq4_xs;
    case 24: return DType::i8;
    case 26: return DType::i32;
    case 30: return DType::bf16;
    default: return std::nullopt;
  }
}

uint32_t ggml_type_of(DType t) {
  switch (t) {
    case DType::f32: return 0;
    case DType::f16: return 1;
    case DType::q4_0: return 2;
    case DType::q8_0: return 8;
    case DType::q4_K: return 12;
    case DType::q4_1: return 3;
    case DType::q5_0: return 6;
    case DType::q5_1: return 7;
    case DType::q2_K: return 10;
    case DType::q3_K: return 11;
    case DType::q5_K: return 13;
    case DType::q6_K: return 14;
    case DType::iq4_nl: return 20;
    case DType::iq4_xs: return 23;
    case DType::i8: return 24;
    case DType::i32: return 26;
    case DType::bf16: return 30;
    case DType::fp8_e4m3: break;  // a KV pool type: no GGUF tensor holds it (can_write_weight_type refuses it)
  }
  return 0;
}

std::string ggml_type_label(uint32_t ggml_type) {
  // ggml's type enum (ggml.h), names as llama.cpp prints them; gaps are retired types.
  static constexpr const char* kNames[] = {
      "F32",     "F16",   "Q4_0",   "Q4_1",    nullptr, nullptr, "Q5_0",  "Q5_1",   "Q8_0",   "Q8_1",
      "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",    "Q6_K",  "Q8_K",  "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
      "IQ4_NL",  "IQ3_S", "IQ2_S",  "IQ4_XS",  "I8",    "I16",   "I32",   "I64",    "F64",    "IQ1_M",
      "BF16",    nullptr, nullptr,  nullptr,   "TQ1_0", "TQ2_0", nullptr, nullptr,  nullptr,  "MXFP4"};
  const char* n = ggml_type < std::size(kNames) ? kNames[ggml_type] : nullptr;
  return n ? std::string(n) + " (" + std::to_string(ggml_type) + ")" : std::to_string(ggml_type);
}

std::string_view supported_ggml_types() {
  return "F32 0, F16 1, Q4_0 2, Q4_1 3, Q5_0 6, Q5_1 7, Q8_0 8, Q2_K 10, Q3_K 11, Q4_K 12, Q5_K 13, Q6_K 14, IQ4_NL 20, "
         "IQ4_XS 23, I8 24, I32 26, BF16 30";
}

}  // namespace tessera
