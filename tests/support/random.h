#pragma once
// Fresh random inputs for every run, with the seed printed so a failure can
// be replayed: TESSERA_TEST_SEED=<seed> fixes it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace tessera::testing {

inline uint64_t test_seed() {
  static const uint64_t seed = [] {
    uint64_t s;
    if (const char* env = std::getenv("TESSERA_TEST_SEED")) {
      s = std::strtoull(env, nullptr, 10);
    } else {
      s = std::random_device{}();
      s = (s << 32) ^ std::random_device{}();
    }
    std::printf("[tessera tests] seed %llu (set TESSERA_TEST_SEED to replay)\n", (unsigned long long)s);
    return s;
  }();
  return seed;
}

class Rng {
 public:
  explicit Rng(uint64_t salt = 0) : gen_(test_seed() ^ (salt * 0x9e3779b97f4a7c15ull)) {}
  float uniform(float lo = -1.0f, float hi = 1.0f) { return std::uniform_real_distribution<float>(lo, hi)(gen_); }
  int32_t integer(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(gen_); }
  std::vector<std::byte> bytes(size_t n) {
    std::vector<std::byte> v(n);
    for (auto& b : v) b = (std::byte)integer(0, 255);
    return v;
  }
  std::vector<float> floats(size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(n);
    for (auto& x : v) x = uniform(lo, hi);
    return v;
  }
  std::mt19937_64& engine() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

}  // namespace tessera::testing
