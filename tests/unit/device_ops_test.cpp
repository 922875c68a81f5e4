// The operator benchmarks through the HAL (engine/bench/device_ops.h), on
// the CPU device with small shapes: every case compiles, runs and is timed,
// the copy bandwidth is measured, and a bad --op is refused by name. (On a
// GPU, tools/gpu-check.sh runs them at full size.)
#include <doctest/doctest.h>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "engine/bench/device_ops.h"

using namespace tessera;

namespace {

std::unique_ptr<Device> cpu_device() {
  register_builtin_backends();
  auto d = BackendRegistry::global().find("cpu")->open(0);
  REQUIRE(d.has_value());
  return std::move(*d);
}

DeviceOpOptions small(const std::string& op) {
  DeviceOpOptions o;
  o.op = op;
  o.batches = 2;
  o.runs_per_batch = 2;
  o.copy_bytes = 1 << 20;
  o.n = 64;
  o.k = 256;
  o.gemv_types = {DType::q4_0, DType::f16};
  o.gemm_types = {DType::q4_K};
  o.gemm_rows = {9};
  o.attention = AttentionParams{4, 2, 16, 16, 0.0f, true};
  o.attention_tokens = {40};
  return o;
}

}  // namespace

TEST_CASE("device op benchmarks: GEMVs, a GEMM and an attention prefill timed through the HAL, with the copy bandwidth") {
  auto device = cpu_device();
  DeviceInfo info;
  info.name = "cpu";
  auto m = bench_device_ops(*device, info, small("matmul"));
  REQUIRE_MESSAGE(m.has_value(), m.status().message());
  CHECK(m->copy_GBps > 0);
  REQUIRE(m->cases.size() == 3);
  CHECK(m->cases[0].dtype == "q4_0");
  CHECK(m->cases[0].m == 1);
  CHECK(m->cases[0].bytes == bytes_for(DType::q4_0, 64 * 256));
  CHECK(m->cases[2].dtype == "q4_K");
  CHECK(m->cases[2].m == 9);
  CHECK(m->cases[2].flops == doctest::Approx(2.0 * 9 * 64 * 256));
  for (const DeviceOpTiming& c : m->cases) {
    CHECK(c.median_ms > 0);
    CHECK(c.min_ms <= c.median_ms);
    CHECK(c.TFLOPs() > 0);
  }
  auto a = bench_device_ops(*device, info, small("attention"));
  REQUIRE_MESSAGE(a.has_value(), a.status().message());
  REQUIRE(a->cases.size() == 1);
  CHECK(a->cases[0].op == "paged_attention");
  CHECK(a->cases[0].flops == doctest::Approx(4.0 * (40 * 41 / 2) * 16 * 4));
  CHECK(a->cases[0].median_ms > 0);

  auto bad = bench_device_ops(*device, info, small("softmax"));
  REQUIRE(!bad.has_value());
  CHECK(bad.status().message().find("--op: 'softmax'") != std::string::npos);
}
