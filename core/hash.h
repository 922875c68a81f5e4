#pragma once
// A fast, well-distributed 64-bit hash of bytes: XXH64 (the xxHash
// specification), so a value can be checked against any other implementation.
// Not cryptographic: whoever keys a table by it verifies what it found.
#include <cstddef>
#include <cstdint>
#include <span>

namespace tessera {

uint64_t hash_bytes(std::span<const std::byte> bytes, uint64_t seed = 0);

}  // namespace tessera
