// hash_bytes is XXH64: checked against the specification's published values
// (xxHash's own sanity check and the commonly quoted string vectors).
#include <doctest/doctest.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "core/hash.h"
#include "support/random.h"

using tessera::hash_bytes;

namespace {

std::span<const std::byte> bytes_of(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

}  // namespace

TEST_CASE("hash_bytes matches XXH64's published test vectors") {
  // xxhsum's sanity buffer: 101 bytes from a squared 32-bit generator.
  constexpr uint32_t prime = 2654435761u;
  std::vector<std::byte> buf(101);
  uint32_t gen = prime;
  for (auto& b : buf) {
    b = (std::byte)(gen >> 24);
    gen *= gen;
  }
  const std::span<const std::byte> s(buf);
  CHECK(hash_bytes(s.first(0), 0) == 0xEF46DB3751D8E999ull);
  CHECK(hash_bytes(s.first(0), prime) == 0xAC75FDA2929B17EFull);
  CHECK(hash_bytes(s.first(1), 0) == 0x4FCE394CC88952D8ull);
  CHECK(hash_bytes(s.first(1), prime) == 0x739840CB819FA723ull);
  CHECK(hash_bytes(s.first(14), 0) == 0xCFFA8DB881BC3A3Dull);
  CHECK(hash_bytes(s.first(14), prime) == 0x5B9611585EFCC9CBull);
  CHECK(hash_bytes(s, 0) == 0x0EAB543384F878ADull);
  CHECK(hash_bytes(s, prime) == 0xCAA65939306F1E21ull);

  CHECK(hash_bytes(bytes_of("a")) == 0xD24EC4F1A98C6E5Bull);
  CHECK(hash_bytes(bytes_of("abc")) == 0x44BC2CF5AD770999ull);
  CHECK(hash_bytes(bytes_of("Nobody inspects the spammish repetition")) == 0xFBCEA83C8A378BF1ull);
}

TEST_CASE("hash_bytes reads unaligned input and depends on every byte") {
  tessera::testing::Rng rng(301);
  for (size_t n : {1u, 7u, 31u, 32u, 33u, 100u}) {
    const auto data = rng.bytes(n);
    // The same bytes one position off an aligned address hash the same.
    std::vector<std::byte> shifted(n + 1);
    std::memcpy(shifted.data() + 1, data.data(), n);
    const uint64_t h = hash_bytes(data, 5);
    CHECK(hash_bytes(std::span(shifted).subspan(1), 5) == h);
    auto flipped = data;
    flipped[(size_t)rng.integer(0, (int32_t)n - 1)] ^= std::byte{1};
    CHECK(hash_bytes(flipped, 5) != h);
  }
}
