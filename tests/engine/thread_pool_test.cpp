// The thread pool every CPU kernel runs on (core/thread_pool.h): each index
// of a call is run exactly once, and by the time the call returns, whatever
// the workers did (joined, late, asleep, spinning). It is in the engine's
// suite so that ThreadSanitizer runs it (the tsan preset builds this suite).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/thread_pool.h"
#include "support/random.h"

using tessera::ThreadPool;

namespace {

// Runs one call of n indices at `grain`; checks every index was run once.
void run_and_check(ThreadPool& pool, int64_t n, int64_t grain) {
  auto hits = std::make_unique<std::atomic<int>[]>((size_t)n);
  for (int64_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
  pool.run(n, grain, [&](int64_t b, int64_t e) {
    REQUIRE(b < e);
    if (e - b < grain) REQUIRE(e == n);  // only the last chunk may be short
    for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
  });
  // Plain reads after the call: the call's return orders every write before it.
  for (int64_t i = 0; i < n; ++i) REQUIRE(hits[i].load(std::memory_order_relaxed) == 1);
}

}  // namespace

TEST_CASE("thread pool: random calls run every index exactly once, before they return") {
  tessera::testing::Rng rng(41);
  for (int threads : {2, 3, 4}) {
    ThreadPool pool(threads);
    for (int call = 0; call < 400; ++call) {
      const int64_t n = rng.integer(1, 300);
      const int64_t grain = rng.integer(1, 8);
      run_and_check(pool, n, grain);
      // Now and then a pause long enough for the workers to go to sleep.
      if (call % 97 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

TEST_CASE("thread pool: thousands of tiny calls back to back leave no worker inside a finished call") {
  // A worker that saw call c's job but was not scheduled until after it
  // returned must not run it: call c's function (a local here) is gone, and
  // the sum would count it twice. Tiny calls make such late workers common.
  ThreadPool pool(3);
  int64_t total = 0;
  for (int call = 0; call < 20000; ++call) {
    std::atomic<int64_t> sum{0};
    const int64_t n = 2 + call % 5;
    pool.run(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum.fetch_add(i + 1, std::memory_order_relaxed);
    });
    REQUIRE(sum.load() == n * (n + 1) / 2);
    total += sum.load();
  }
  CHECK(total > 0);
}

TEST_CASE("thread pool: writes of a call are visible to the caller and to the next call") {
  ThreadPool pool(2);
  std::vector<int64_t> v(4096, 0);  // plain memory: TSan checks the ordering
  for (int round = 1; round <= 50; ++round) {
    pool.run((int64_t)v.size(), 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) v[(size_t)i] += i;  // reads the last call's write
    });
    for (size_t i = 0; i < v.size(); i += 511) REQUIRE(v[i] == (int64_t)i * round);
  }
}

TEST_CASE("thread pool: a pool whose workers are asleep or spinning is destroyed cleanly") {
  for (int i = 0; i < 20; ++i) {
    ThreadPool pool(4);
    run_and_check(pool, 64, 1);
    if (i % 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ThreadPool never_used(3);
}
