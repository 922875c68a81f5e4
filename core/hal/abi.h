#pragma once
// What crosses dlopen between tessera and a backend plugin. The plugin's one
// exported symbol,
//   extern "C" const tessera::BackendRegistration* tessera_backend_register(uint32_t host_abi_version);
// returns its registration whatever version the host speaks (ABI 1 plugins
// returned null for any version but 1). The host reads the prefix, which no
// version moves, and loads the plugin only when the ABI version, the headers
// hash and the build fingerprint all match its own; anything else is refused
// in one line (core/hal/abi_check.h). Everything past the prefix is C++
// (virtual classes, std::string, Status) and is only touched after that.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/hal/abi_version.h"
#include "core/hal/device_info.h"
#include "core/hal/plan.h"
#include "core/status.h"

namespace tessera {

class Backend;

// "TSBK": a registration of ABI 2 or later (ABI 1's began with its version).
inline constexpr uint32_t kBackendRegistrationMagic = 0x4b425354;

// What makes C++ objects built by two compilations incompatible even when
// they were built from the same headers: the compiler and its standard
// library's layout choices, and the sizes of the types that cross.
struct BuildFingerprint {
  uint32_t compiler = 0;        // 1 gcc, 2 clang, 0 other
  uint32_t compiler_major = 0;  // C++20 library types are not ABI-stable across GCC majors
  uint32_t stdlib = 0;          // 1 libstdc++, 2 libc++, 0 other
  uint32_t stdlib_abi = 0;      // _GLIBCXX_USE_CXX11_ABI, or libc++'s _LIBCPP_ABI_VERSION
  uint32_t stdlib_debug = 0;    // _GLIBCXX_DEBUG changes every container's layout
  uint32_t pointer_bytes = 0;
  uint32_t sizeof_string = 0;
  uint32_t sizeof_vector = 0;
  uint32_t sizeof_status = 0;
  uint32_t sizeof_device_info = 0;
  uint32_t sizeof_step_args = 0;
  uint32_t sizeof_plan = 0;
  uint32_t sizeof_dispatch = 0;
};

// This translation unit's fingerprint: the plugin's when a plugin calls it,
// the host's when the registry does.
constexpr BuildFingerprint this_build_fingerprint() {
  BuildFingerprint f;
#if defined(__clang__)
  f.compiler = 2;
  f.compiler_major = __clang_major__;
#elif defined(__GNUC__)
  f.compiler = 1;
  f.compiler_major = __GNUC__;
#endif
#if defined(_LIBCPP_VERSION)
  f.stdlib = 2;
  f.stdlib_abi = _LIBCPP_ABI_VERSION;
#elif defined(__GLIBCXX__)
  f.stdlib = 1;
  f.stdlib_abi = _GLIBCXX_USE_CXX11_ABI;
#endif
#if defined(_GLIBCXX_DEBUG)
  f.stdlib_debug = 1;
#endif
  f.pointer_bytes = sizeof(void*);
  f.sizeof_string = sizeof(std::string);
  f.sizeof_vector = sizeof(std::vector<int>);
  f.sizeof_status = sizeof(Status);
  f.sizeof_device_info = sizeof(DeviceInfo);
  f.sizeof_step_args = sizeof(StepArgs);
  f.sizeof_plan = sizeof(Plan);
  f.sizeof_dispatch = sizeof(Dispatch);
  return f;
}

struct BackendRegistration {
  // The prefix: every version of tessera reads these at these offsets.
  uint32_t magic = kBackendRegistrationMagic;
  uint32_t struct_size = sizeof(BackendRegistration);
  uint32_t abi_version = kBackendAbiVersion;
  uint64_t headers_hash = kBackendAbiHeadersHash;
  // Read only when the prefix matches the host's.
  BuildFingerprint build = this_build_fingerprint();
  const char* name = nullptr;
  Backend* (*create)() = nullptr;  // ownership passes to the caller
};
static_assert(offsetof(BackendRegistration, magic) == 0 && offsetof(BackendRegistration, struct_size) == 4 &&
                  offsetof(BackendRegistration, abi_version) == 8 && offsetof(BackendRegistration, headers_hash) == 16,
              "the registration prefix is read by every version of tessera: never move it");

// The registration of a plugin built from this tree: `static const auto reg =
// make_backend_registration("name", &create);` in the plugin's source, so
// that the fingerprint is the plugin compilation's own.
constexpr BackendRegistration make_backend_registration(const char* name, Backend* (*create)()) {
  BackendRegistration r;
  r.name = name;
  r.create = create;
  return r;
}

}  // namespace tessera

extern "C" {
using tessera_backend_register_fn = const tessera::BackendRegistration* (*)(uint32_t host_abi_version);
}
