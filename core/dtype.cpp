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
    {"q4_1", kQK4_0, sizeof(BlockQ4_1), true},
    {"q5_0", kQK4_0, sizeof(BlockQ5_0), true},
    {"q5_1", kQK4_0, sizeof(BlockQ5_1), true},
    {"iq4_nl", kQK4_NL, sizeof(BlockIq4_NL), true},
    {"q2_K", kQK_K, sizeof(BlockQ2_K), true},
    {"q3_K", kQK_K, sizeof(BlockQ3_K), true},
    {"q5_K", kQK_K, sizeof(BlockQ5_K), true},
    {"q6_K", kQK_K, sizeof(BlockQ6_K), true},
    {"iq4_xs", kQK_K, sizeof(BlockIq4_XS), true},
    {"fp8_e4m3", 32, sizeof(BlockFp8E4M3), true},
}};
}  // namespace

const DTypeTraits& traits(DType t) { return kTraits[static_cast<size_t>(t)]; }

std::optional<DType> dtype_from_name(std::string_view n) {
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (kTraits[i].name == n) return static_cast<DType>(i);
  return std::nullopt;
}

}  // namespace tessera
