#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/thread_pool.h"
#include "core/read_bandwidth.h"

TEST_CASE("a small read-bandwidth run returns a positive, finite rate") {
  tessera::SerialFor serial;
  tessera::ThreadPool pool(2);
  for (tessera::ParallelFor* pf : {static_cast<tessera::ParallelFor*>(&serial), static_cast<tessera::ParallelFor*>(&pool)}) {
    const tessera::BandwidthResult r = tessera::measure_read_bandwidth(*pf, (8u << 20) + 1000, 3);
    CHECK(r.read_GBps > 0);
    CHECK(std::isfinite(r.read_GBps));
    CHECK(r.bytes == (8u << 20) + 768);  // rounded down to the 256-byte step
    CHECK(r.reps == 3);
    CHECK(r.best_GBps >= r.read_GBps);  // the fastest pass against the median
    CHECK(std::string(r.kernel).size() > 0);
  }
}

TEST_CASE("the last-level cache size is a plausible number of bytes") {
  const uint64_t llc = tessera::last_level_cache_bytes();
  CHECK(llc >= (uint64_t{64} << 10));
  CHECK(llc <= (uint64_t{4} << 30));
}
