// What every device says about itself: its index and id, an architecture id,
// and free memory within its total (or a reason it cannot tell).
#include <doctest/doctest.h>

#include "hal_harness.h"
#include "core/hal/device_id.h"

using namespace tessera;
using namespace tessera::testing;

TEST_CASE("every device knows its index and architecture, and its free memory is at most its total") {
  for (DeviceUnderTest& d : devices_under_test()) {
    CAPTURE(d.label);
    const DeviceInfo& info = d.device->info();
    // The harness opened backend device i as "backend:i": the device says the same.
    CHECK(DeviceId{info.backend, info.index}.to_string() == d.label);
    CHECK(!info.arch.empty());
    auto free = d.device->free_memory();
    if (!free) {
      // A backend may not know; it says so in one line naming itself.
      CHECK(free.status().code() == StatusCode::unsupported);
      CHECK(free.status().message().find(info.backend) == 0);
      continue;
    }
    CHECK(*free > 0);
    CHECK(*free <= info.memory_bytes);
  }
}
