#pragma once
// Tile sizes of the matmul family, chosen per op and target by the tiling
// pass (graph/passes/tile.cpp), printed in the IR as tile{...} and honored
// by the kernels; 0 means the kernel's own default. The CPU fields are read
// by kernels/cpu/matmul.cpp, the GPU fields by the Vulkan matmul shaders
// (as specialization constants, backends/vulkan/encode_matmul.cpp). Sizes
// never change a result; batch_invariant, the one kernel choice here, does.
#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace tessera {

struct TileParams {
  // CPU
  int64_t weight_block_bytes = 0;  // weight bytes kept hot in cache while every x-row tile passes over them
  int64_t chunk_bytes = 0;         // least work one parallel item covers, in weight bytes per 4-row x tile
  // GPU: matmul_gemv (few rows)
  int64_t workgroup_size = 0;      // invocations per workgroup
  int64_t rows_per_workgroup = 0;  // weight rows (outputs) one workgroup computes
  // GPU: matmul_gemm (many rows)
  int64_t tile_m = 0, tile_n = 0;  // output tile of one workgroup: x rows by weight rows
  // Every backend, matmul family and paged_attention: 1 runs the kernels that
  // compute each row in one order whatever the step's rows, the row's place,
  // the bucket or the token's decode/prefill path (docs/backends.md, "Batch
  // invariance"), where the default kernels do not; set from --batch-invariant.
  int64_t batch_invariant = 0;

  bool empty() const {
    return weight_block_bytes == 0 && chunk_bytes == 0 && workgroup_size == 0 && rows_per_workgroup == 0 &&
           tile_m == 0 && tile_n == 0 && batch_invariant == 0;
  }
  bool operator==(const TileParams&) const = default;
};

// One field's name and the values a kernel accepts. The printer, the parser
// and --tile all go through this table, so they agree on names and ranges.
struct TileField {
  const char* name;
  int64_t TileParams::*member;
  int64_t min, max;      // inclusive
  int64_t multiple_of;   // 1: any; otherwise the value must divide by it
  bool power_of_two;
  const char* unit;      // "bytes", "invocations", "rows"
};
std::span<const TileField> tile_fields();
const TileField* find_tile_field(const std::string& name);
// "" when v fits f; otherwise what was expected, e.g. "a power of two in [32, 128]".
std::string tile_value_problem(const TileField& f, int64_t v);
// What f accepts, e.g. "a multiple of 4 in [4, 4096] (rows)".
std::string tile_field_range(const TileField& f);
// "weight_block_bytes, chunk_bytes, ..." for error messages.
std::string tile_field_names();

}  // namespace tessera
