#pragma once
// GGUF metadata values (the typed KV pairs of a GGUF header) and the mapping
// between ggml tensor type ids and our DTypes. Values keep the exact bits the
// file held, so that a file read and written again is byte-identical.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace tessera {

// GGUF's gguf_type, by id.
enum class GgufType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
inline constexpr uint32_t kGgufTypeCount = 13;

std::string_view name(GgufType t);  // "u32", "string", "array", ...
// Bytes one scalar of this type takes in the file; 0 for string and array.
uint32_t gguf_scalar_bytes(GgufType t);
bool gguf_is_integer(GgufType t);

// An array: numeric and bool elements are kept packed as the file stores
// them (little-endian); strings and nested arrays are kept decoded.
struct GgufArray {
  GgufType elem_type = GgufType::u8;
  uint64_t count = 0;
  std::vector<std::byte> raw;        // elem_type is a scalar: count * gguf_scalar_bytes
  std::vector<std::string> strings;  // elem_type == string
  std::vector<GgufArray> arrays;     // elem_type == array
};

struct GgufValue {
  GgufType type = GgufType::u8;
  uint64_t bits = 0;  // scalars: the value's little-endian bits, zero-extended
  std::string str;    // type == string
  GgufArray array;    // type == array

  static GgufValue of_u32(uint32_t v);
  static GgufValue of_i32(int32_t v);
  static GgufValue of_u64(uint64_t v);
  static GgufValue of_i64(int64_t v);
  static GgufValue of_f32(float v);
  static GgufValue of_f64(double v);
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  static GgufValue of_strings(std::vector<std::string> v);
  static GgufValue of_f32s(const std::vector<float>& v);
  static GgufValue of_i32s(const std::vector<int32_t>& v);

  // Integer scalars read as signed / unsigned 64-bit (sign- or zero-extended).
  int64_t as_i64() const;
  uint64_t as_u64() const;
  // f32 or f64 scalars.
  double as_f64() const;

  // One printable line: scalars as written, strings as-is (long ones cut),
  // arrays listed when short, else summarized as "array<string>[32000]".
  std::string to_display_string() const;
  // "u32", "string", "array<f32>", "array<array<i32>>".
  std::string type_name() const;
};

struct GgufKv {
  std::string key;
  GgufValue value;
};

// ggml type ids for the dtypes we read and write; nullopt for the others.
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
uint32_t ggml_type_of(DType t);
// "F32 0, F16 1, Q4_0 2, Q8_0 8, Q4_K 12, I8 24, I32 26, BF16 30".
// "IQ2_XXS (16)": ggml's name for a type id, known to Tessera or not.
std::string ggml_type_label(uint32_t ggml_type);
std::string_view supported_ggml_types();

}  // namespace tessera
