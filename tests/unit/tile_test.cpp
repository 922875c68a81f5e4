// The tiling pass on hand-made devices (never the measured one: its roofs
// vary run to run), the tile{...} syntax, and --tile's validation. Expected
// tiles are worked out by hand from the rules in graph/passes/tile.cpp.
#include <doctest/doctest.h>

#include "graph/cost_model.h"
#include "graph/parser.h"
#include "graph/pass_manager.h"
#include "graph/printer.h"
#include "graph/verifier.h"

using namespace tessera;
using namespace tessera::graph;

namespace {

// Three matmuls over one 64-wide x: 8 KiB, 128 KiB and 2 MiB of f32 weights.
const char* const kThreeMatmuls = R"(graph @three {
  %0 = input "token_ids" : i32[T]
  %1 = weight "emb" : f32[16, 64]
  %2 = weight "w_small" : f32[32, 64]
  %3 = weight "w_mid" : f32[512, 64]
  %4 = weight "w_big" : f32[8192, 64]
  %5 = embedding(%1, %0) : f32[T, 64]  # x
  %6 = matmul(%5, %2) : f32[T, 32]  # small
  %7 = matmul(%5, %3) : f32[T, 512]  # mid
  %8 = matmul(%5, %4) : f32[T, 8192]  # big
  return %8
}
)";

Expected<std::string> tiled(const DeviceInfo* d, const std::string& overrides = "") {
  auto g = parse(kThreeMatmuls, "three.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  PassContext ctx;
  ctx.target = {d ? d->backend : "cpu", 0};
  ctx.device = d;
  auto o = parse_tile_overrides(overrides);
  REQUIRE_MESSAGE(o.has_value(), o.status().message());
  ctx.tile_overrides = *o;
  TS_TRY(run_passes(*g, "tile", ctx));
  return print(*g);
}

std::string line_of(const std::string& text, const std::string& label) {
  const size_t at = text.find("# " + label + "\n");
  REQUIRE(at != std::string::npos);
  const size_t start = text.rfind('\n', at) + 1;
  return text.substr(start, at - start);
}

DeviceInfo cpu_4_cores() {
  DeviceInfo d;
  d.backend = "cpu";
  d.compute_units = 4;
  d.l2_bytes = 512 * 1024;
  d.roofs.read_GBps = 10;  // 10 kB a microsecond
  d.roofs.f32_GFLOPs = 100;
  d.roofs.source = RoofSource::nominal;
  return d;
}

// lavapipe-like: 8-wide subgroups, 2 cores, no roofs.
DeviceInfo vulkan_small() {
  DeviceInfo d;
  d.backend = "vulkan";
  d.subgroup_size = 8;
  d.compute_units = 2;
  d.max_workgroup_invocations = 256;
  d.shared_memory_per_group_bytes = 32768;
  d.kernel_isa = "spirv_subgroup";
  return d;
}

// A GPU whose flops per byte (30) call for 128x128 gemm tiles.
DeviceInfo vulkan_roofed() {
  DeviceInfo d = vulkan_small();
  d.subgroup_size = 32;
  d.compute_units = 4;
  d.max_workgroup_invocations = 1024;
  d.shared_memory_per_group_bytes = 48 * 1024;
  d.roofs.read_GBps = 1000;
  d.roofs.f32_GFLOPs = 30000;
  d.roofs.source = RoofSource::datasheet;
  return d;
}

}  // namespace

TEST_CASE("the cost model splits an op into one item when it is shorter than a pool round trip per core, up to 4 per core") {
  CHECK(parallel_items(0, 4) == 0);      // no roofs: no estimate
  CHECK(parallel_items(7.9, 4) == 1);    // < 2 us x 4 cores
  CHECK(parallel_items(13.3, 4) == 4);   // at least one per core once split
  CHECK(parallel_items(80, 4) == 10);    // 8 us an item
  CHECK(parallel_items(1000, 4) == 125);   // still 8 us an item
  CHECK(parallel_items(1e6, 4) == 256);    // at most 64 per core
}

TEST_CASE("CPU tiles: tiny matmuls run as one item, big ones split into 8 us items, weight blocks from L2") {
  const DeviceInfo d = cpu_4_cores();
  auto text = tiled(&d);
  REQUIRE_MESSAGE(text.has_value(), text.status().message());
  // small: 8.6 kB at decode = 0.86 us < 8 us: one item, the whole 8 KiB.
  CHECK(line_of(*text, "small") == "  %6 = matmul(%5, %2) tile{weight_block_bytes=65536, chunk_bytes=8192} : f32[T, 32]  ");
  // mid: 133 kB = 13.3 us: 4 items (one a core) of 32 KiB.
  CHECK(line_of(*text, "mid") == "  %7 = matmul(%5, %3) tile{weight_block_bytes=65536, chunk_bytes=32768} : f32[T, 512]  ");
  // big: 2.13 MB = 213 us: 26 items of 8 us, 80,660 bytes (2 MiB / 26, rounded up).
  CHECK(line_of(*text, "big") == "  %8 = matmul(%5, %4) tile{weight_block_bytes=65536, chunk_bytes=80660} : f32[T, 8192]  ");
  auto back = parse(*text);
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  CHECK(print(*back) == *text);

  DeviceInfo no_roofs = d;
  no_roofs.roofs = {};
  auto plain = tiled(&no_roofs);
  REQUIRE(plain.has_value());
  CHECK(line_of(*plain, "big").find("tile{weight_block_bytes=65536, chunk_bytes=65536}") != std::string::npos);
}

TEST_CASE("Vulkan tiles: gemv rows per workgroup grow while 4 workgroups per unit remain, gemm tile_n halves for few rows") {
  const DeviceInfo d = vulkan_small();
  auto text = tiled(&d);
  REQUIRE_MESSAGE(text.has_value(), text.status().message());
  CHECK(line_of(*text, "small").find("tile{workgroup_size=32, rows_per_workgroup=16, tile_m=64, tile_n=32}") != std::string::npos);
  CHECK(line_of(*text, "mid").find("tile{workgroup_size=32, rows_per_workgroup=64, tile_m=64, tile_n=64}") != std::string::npos);
  CHECK(line_of(*text, "big").find("tile{workgroup_size=32, rows_per_workgroup=128, tile_m=64, tile_n=64}") != std::string::npos);
  auto back = parse(*text);
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  CHECK(print(*back) == *text);
}

TEST_CASE("Vulkan tiles: the roofs' flops per byte pick the gemm tile, shrunk to the device's shared memory") {
  DeviceInfo d = vulkan_roofed();
  auto text = tiled(&d);
  REQUIRE_MESSAGE(text.has_value(), text.status().message());
  // 4 subgroups of 32; 8192 rows keep 4 groups a unit at 8 passes of 16 rows.
  CHECK(line_of(*text, "big").find("tile{workgroup_size=128, rows_per_workgroup=128, tile_m=128, tile_n=128}") != std::string::npos);
  CHECK(line_of(*text, "small").find("tile_m=128, tile_n=32}") != std::string::npos);

  d.shared_memory_per_group_bytes = 8192;  // 128x128 stages 16 KiB; 64x64 8 KiB
  text = tiled(&d);
  REQUIRE(text.has_value());
  CHECK(line_of(*text, "big").find("tile_m=64, tile_n=64}") != std::string::npos);
}

TEST_CASE("--tile overrides the chosen GPU tiles, and a tile the device cannot hold is a one-line error") {
  DeviceInfo d = vulkan_small();
  auto text = tiled(&d, "*.tile_m=32,matmul.workgroup_size=64,*.rows_per_workgroup=8");
  REQUIRE_MESSAGE(text.has_value(), text.status().message());
  CHECK(line_of(*text, "mid").find("tile{workgroup_size=64, rows_per_workgroup=8, tile_m=32, tile_n=64}") != std::string::npos);

  d.shared_memory_per_group_bytes = 8192;
  auto too_big = tiled(&d, "*.tile_m=128,*.tile_n=128");
  REQUIRE(!too_big.has_value());
  CHECK(too_big.status().message() ==
        "pass tile: tile of matmul 'small': tile_m=128, tile_n=128 needs 16384 bytes of shared memory; the device has 8192 (--tile)");
  auto too_wide = tiled(&d, "*.workgroup_size=512");
  REQUIRE(!too_wide.has_value());
  CHECK(too_wide.status().message().find("workgroup_size=512 exceeds the device's 256 invocations per workgroup") != std::string::npos);
}

TEST_CASE("--tile names the item and the allowed values when one is wrong") {
  auto msg = [](const std::string& spec) {
    auto r = parse_tile_overrides(spec);
    REQUIRE(!r.has_value());
    return r.status().message();
  };
  CHECK(msg("matmul.tile_m=48") == "--tile: 'matmul.tile_m=48': tile_m must be a power of two in [32, 128] (rows), got '48'");
  CHECK(msg("*.rows_per_workgroup=6") ==
        "--tile: '*.rows_per_workgroup=6': rows_per_workgroup must be a multiple of 4 in [4, 4096] (rows), got '6'");
  CHECK(msg("matmul.workgroup_size=0") ==
        "--tile: 'matmul.workgroup_size=0': workgroup_size must be an integer in [1, 1024] (invocations), got '0'");
  CHECK(msg("matmul.chunk_bytes=4k") == "--tile: 'matmul.chunk_bytes=4k': chunk_bytes must be an integer in [1, 1099511627776] (bytes), got '4k'");
  CHECK(msg("matmul.rows=4").find("--tile: 'matmul.rows=4': no tile field 'rows'; expected one of weight_block_bytes, chunk_bytes, "
                                  "workgroup_size, rows_per_workgroup, tile_m, tile_n") == 0);
  CHECK(msg("softmax.tile_m=32").find("--tile: 'softmax.tile_m=32': OP 'softmax' is not a matmul") == 0);
  CHECK(msg("tile_m=32") == "--tile: 'tile_m=32'; expected OP.FIELD=VALUE, e.g. matmul.chunk_bytes=32768");
  auto ok = parse_tile_overrides("matmul_qkv.tile_n=128,*.chunk_bytes=4096");
  REQUIRE(ok.has_value());
  CHECK(ok->size() == 2);
  CHECK((*ok)[0].value == 128);
}

TEST_CASE("tile{...} in IR text parses only known fields within their ranges") {
  std::string text = kThreeMatmuls;
  const std::string plain = "%6 = matmul(%5, %2) :";
  auto with = [&](const std::string& tile) {
    std::string t = text;
    t.replace(t.find(plain), plain.size(), "%6 = matmul(%5, %2) tile{" + tile + "} :");
    return parse(t, "t.ir");
  };
  auto good = with("tile_m=32, rows_per_workgroup=64");
  REQUIRE_MESSAGE(good.has_value(), good.status().message());
  CHECK(print(*good).find("matmul(%5, %2) tile{rows_per_workgroup=64, tile_m=32} :") != std::string::npos);
  auto bad_value = with("tile_m=48");
  REQUIRE(!bad_value.has_value());
  CHECK(bad_value.status().message().find("t.ir:8: expected tile field 'tile_m' a power of two in [32, 128] (rows), got 48") == 0);
  auto bad_name = with("tile_k=16");
  REQUIRE(!bad_name.has_value());
  CHECK(bad_name.status().message().find("expected a tile field (weight_block_bytes,") != std::string::npos);
}

TEST_CASE("batch invariance marks every matmul tile{batch_invariant=1} beside its sizes, and the mark parses back") {
  auto g = parse(kThreeMatmuls, "three.ir");
  REQUIRE(g.has_value());
  const DeviceInfo d = cpu_4_cores();
  PassContext ctx;
  ctx.device = &d;
  ctx.batch_invariant = true;
  REQUIRE(run_passes(*g, "tile", ctx).is_ok());
  for (const Node& n : g->nodes)
    if (n.op == OpKind::matmul) CHECK(n.tile.batch_invariant == 1);
  const std::string text = print(*g);
  CHECK(line_of(text, "small").find("batch_invariant=1} :") != std::string::npos);
  auto back = parse(text, "printed.ir");
  REQUIRE_MESSAGE(back.has_value(), back.status().message());
  CHECK(print(*back) == text);
  // Without it, no node is marked; --tile may mark one op kind by hand.
  auto plain = tiled(&d);
  REQUIRE(plain.has_value());
  CHECK(plain->find("batch_invariant") == std::string::npos);
  auto by_hand = tiled(&d, "matmul.batch_invariant=1");
  REQUIRE(by_hand.has_value());
  CHECK(line_of(*by_hand, "big").find("batch_invariant=1") != std::string::npos);
  const auto two = parse_tile_overrides("matmul.batch_invariant=2");
  REQUIRE(!two.has_value());
  CHECK(two.status().message() == "--tile: 'matmul.batch_invariant=2': batch_invariant must be an integer in [0, 1] (flag), got '2'");
}

TEST_CASE("tiles of a node --place put on a second device of the backend come from that device's DeviceInfo") {
  // Oracle: the tiles each device gives the whole graph on its own.
  const DeviceInfo small = vulkan_small(), roofed = vulkan_roofed();
  auto all_small = tiled(&small), all_roofed = tiled(&roofed);
  REQUIRE(all_small.has_value());
  REQUIRE(all_roofed.has_value());
  auto g = parse(kThreeMatmuls, "three.ir");
  REQUIRE(g.has_value());
  PassContext ctx;
  ctx.target = {"vulkan", 0};
  ctx.device = &small;
  ctx.other_devices.push_back({{"vulkan", 1}, nullptr, &roofed});
  auto o = parse_placement_overrides("mid=vulkan:1");
  REQUIRE(o.has_value());
  ctx.placement_overrides = *o;
  REQUIRE(run_passes(*g, "place,tile", ctx).is_ok());
  const std::string text = print(*g);
  auto tile_of = [](const std::string& line) { return line.substr(line.find("tile{"), line.find('}') - line.find("tile{") + 1); };
  CHECK(line_of(text, "mid").find("@vulkan:1") != std::string::npos);
  CHECK(tile_of(line_of(text, "mid")) == tile_of(line_of(*all_roofed, "mid")));
  CHECK(tile_of(line_of(text, "small")) == tile_of(line_of(*all_small, "small")));
  CHECK(tile_of(line_of(text, "big")) == tile_of(line_of(*all_small, "big")));
  // The two devices differ on mid, so the test tells them apart.
  CHECK(tile_of(line_of(*all_roofed, "mid")) != tile_of(line_of(*all_small, "mid")));
}
