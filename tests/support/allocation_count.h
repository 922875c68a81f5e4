#pragma once
// The counters that support/counting_new.h's operator new feeds, for test
// files of an executable whose one counting_new.h file replaces operator new.
// allocations_of() checks that the replacement is linked in (otherwise every
// count would be 0 and any "allocates nothing" check would pass unseen).
#include <doctest/doctest.h>

#include <atomic>
#include <memory>

namespace tessera::testing {

inline std::atomic<bool> g_counting{false};
inline std::atomic<long> g_allocations{0};

// Runs fn once to warm up (static init, first-use probes), then again counting.
template <typename Fn>
long allocations_of(Fn fn) {
  fn();
  g_allocations = 0;
  g_counting = true;
  // An allocation that escapes, so the compiler cannot elide it: it must be counted.
  static std::unique_ptr<int> canary;
  canary = std::make_unique<int>(1);
  const long canary_count = g_allocations.exchange(0);
  fn();
  g_counting = false;
  REQUIRE_MESSAGE(canary_count == 1, "operator new is not counted: include support/counting_new.h in one file of this executable");
  return g_allocations.load();
}

}  // namespace tessera::testing
