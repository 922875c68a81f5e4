#pragma once
// A one-rope graph whose rope reads a folded cos/sin table (the constant
// fold_constants makes for the CPU). x is a weight, so the plan needs no
// embedding. Used by the CPU table tests and by the Vulkan --strict test
// (the Vulkan rope computes its own angles and refuses a table input).
namespace tessera::testing {

inline constexpr const char* kRopeWithTable = R"(graph @rope_table {
  %0 = input "positions" : i32[T]
  %1 = weight "x" : f32[4, 16]
  %2 = constant "rope_table.0" : f32[64, 4, 2] {recipe=rope_table, rot_dims=8, theta=10000, positions=64}
  %3 = rope(%1, %0, %2) {heads=2, head_dim=8, rot_dims=8, theta=10000, layout=interleaved} : f32[4, 16]  # rope
  return %3
}
)";

}  // namespace tessera::testing
