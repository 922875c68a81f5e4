#pragma once
// The two numbers a backend plugin and the tessera that loads it must share
// (docs/backends.md, "The plugin boundary"). tests/unit/backend_abi_test.cpp
// hashes the headers that define the boundary (everything core/hal/backend.h
// includes, except this file) and fails until both lines below are updated:
// a change to the HAL or the op set is a new ABI version.
#include <cstdint>

namespace tessera {

inline constexpr uint32_t kBackendAbiVersion = 14;
inline constexpr uint64_t kBackendAbiHeadersHash = 0xde2de78d07b08466ull;

}  // namespace tessera
