#pragma once
// A runner's plan compiled on its device by hand, for tests of what a
// backend does with one step: every bound buffer (weights, KV pools) filled
// with random floats from a seed, so two bindings from one seed start equal,
// and the step's arrays held in vectors (StepArrays, core/hal/step_padding.h).
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/hal/device.h"
#include "core/hal/plan.h"
#include "core/hal/step_padding.h"
#include "support/random.h"

namespace tessera::testing {

struct BoundPlan {
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> bound;  // by plan buffer id; null where the executable allocates
  std::unique_ptr<Executable> exe;
};

// Allocates and fills the plan's bound buffers on `device` through `stream`, then compiles.
inline BoundPlan bind_random(Device& device, Stream& stream, const Plan& plan, uint64_t seed) {
  Rng rng(seed);
  BoundPlan b;
  b.bound.assign(plan.buffers.size(), nullptr);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& pb = plan.buffers[i];
    if (!is_bound(pb.role)) continue;
    auto buf = device.allocate(pb.bytes, pb.role == BufferRole::kv_pool ? MemoryUse::kv_cache : MemoryUse::weights);
    REQUIRE(buf.has_value());
    const std::vector<float> values = rng.floats(pb.bytes / sizeof(float) + 1, -0.1f, 0.1f);
    std::vector<std::byte> bytes(pb.bytes);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    REQUIRE(stream.upload(**buf, 0, bytes).is_ok());
    b.bound[i] = buf->get();
    b.owned.push_back(std::move(*buf));
  }
  auto exe = device.compile(plan, b.bound);
  REQUIRE_MESSAGE(exe.has_value(), exe.status().message());
  b.exe = std::move(*exe);
  return b;
}

}  // namespace tessera::testing
