#include "core/tile_params.h"

#include <array>

namespace tessera {

namespace {

// The ranges are what the kernels are written for: the gemm shader gives each
// invocation an 8x8 block of outputs, so its tiles are 32, 64 or 128 a side
// (16 to 256 invocations); gemv takes weight rows four at a time.
// batch_invariant is 0 or 1.
constexpr int64_t kMaxBytes = int64_t{1} << 40;
const std::array<TileField, 7> kFields = {{
    {"weight_block_bytes", &TileParams::weight_block_bytes, 1, kMaxBytes, 1, false, "bytes"},
    {"chunk_bytes", &TileParams::chunk_bytes, 1, kMaxBytes, 1, false, "bytes"},
    {"workgroup_size", &TileParams::workgroup_size, 1, 1024, 1, false, "invocations"},
    {"rows_per_workgroup", &TileParams::rows_per_workgroup, 4, 4096, 4, false, "rows"},
    {"tile_m", &TileParams::tile_m, 32, 128, 1, true, "rows"},
    {"tile_n", &TileParams::tile_n, 32, 128, 1, true, "rows"},
    {"batch_invariant", &TileParams::batch_invariant, 0, 1, 1, false, "flag"},
}};

}  // namespace

std::span<const TileField> tile_fields() { return kFields; }

const TileField* find_tile_field(const std::string& name) {
  for (const TileField& f : kFields)
    if (name == f.name) return &f;
  return nullptr;
}

std::string tile_value_problem(const TileField& f, int64_t v) {
  const bool pow2_ok = !f.power_of_two || (v > 0 && (v & (v - 1)) == 0);
  if (v >= f.min && v <= f.max && v % f.multiple_of == 0 && pow2_ok) return "";
  return tile_field_range(f);
}

std::string tile_field_range(const TileField& f) {
  std::string what = f.power_of_two ? "a power of two" : f.multiple_of > 1 ? "a multiple of " + std::to_string(f.multiple_of) : "an integer";
  return what + " in [" + std::to_string(f.min) + ", " + std::to_string(f.max) + "] (" + f.unit + ")";
}

std::string tile_field_names() {
  std::string s;
  for (const TileField& f : kFields) s += std::string(s.empty() ? "" : ", ") + f.name;
  return s;
}

}  // namespace tessera
