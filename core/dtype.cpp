#include "core/dtype.h"

#include <array>

namespace tessera {

namespace {
constexpr std::array<DTypeTraits, kDTypeCount> kTraits = {{
    {"f32", 1, 4, false},
    {"f16", 1, 2, false},
    {"bf16", 1, 2, false},
    {"i8", 1, 1, false},
    {"i32", 1, 4, false},
    {"q8_0", kQK8_0, sizeof(BlockQ8_0), true},
    {"q4_0", kQK4_0, sizeof(BlockQ4_0), true},
    {"q4_K", kQK_K, sizeof(BlockQ4_K), true},
}};
}  // namespace

const DTypeTraits& traits(DType t) { return kTraits[static_cast<size_t>(t)]; }

std::optional<DType> dtype_from_name(std::string_view n) {
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (kTraits[i].name == n) return static_cast<DType>(i);
  return std::nullopt;
}

}  // namespace tessera
