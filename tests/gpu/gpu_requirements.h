#pragma once
// What the GPU suites need: the CUDA or ROCm plugin built here
// (TESSERA_<NAME>_BUILT, from tests/CMakeLists.txt), and a device of it.
// Without a device the runtime's own reason is printed and the cases that
// need one are reported Skipped (support/requirements.h).
#include <filesystem>
#include <string>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "support/requirements.h"

namespace tessera::testing {

inline Backend* load_backend(const std::string& name) {
  register_builtin_backends();
  auto& reg = BackendRegistry::global();
  reg.load_plugins({std::filesystem::path(TESSERA_BIN).parent_path().string()});
  for (Backend* b : reg.all())
    if (b->name() == name) return b;
  return nullptr;
}

// The plugin exists where CMake built it (TESSERA_<NAME>_BUILT).
inline Requirement plugin_built(const std::string& name, bool built) {
  return {"the " + name + " plugin's tests", built ? "" : "the " + name + " plugin is not built here (its compiler was not found at configure)"};
}

// A GPU of that backend: what the runtime says when there is none.
inline Requirement gpu_present(const std::string& name, bool built) {
  if (!built) return plugin_built(name, built);
  Backend* b = load_backend(name);
  if (!b) return {"the " + name + " GPU tests", ""};  // built but not loaded: the cases run and fail
  return {"the " + name + " GPU tests", b->enumerate().empty() ? "no " + name + " device (" + b->why_none() + ")" : ""};
}

#if defined(TESSERA_CUDA_BUILT)
inline constexpr bool kCudaBuilt = true;
#else
inline constexpr bool kCudaBuilt = false;
#endif
#if defined(TESSERA_ROCM_BUILT)
inline constexpr bool kRocmBuilt = true;
#else
inline constexpr bool kRocmBuilt = false;
#endif

// The plugins built with their collectives library (NCCL, RCCL): from
// tests/CMakeLists.txt, where CMake found it.
#if defined(TESSERA_CUDA_NCCL_BUILT)
inline constexpr bool kCudaNccl = true;
#else
inline constexpr bool kCudaNccl = false;
#endif
#if defined(TESSERA_ROCM_RCCL_BUILT)
inline constexpr bool kRocmRccl = true;
#else
inline constexpr bool kRocmRccl = false;
#endif

// `name`'s plugin built with `library`, and `devices` GPUs of it.
inline Requirement gpus_with(const std::string& name, bool built, bool with_library, const std::string& library, int devices) {
  Requirement r{"the " + name + " " + library + " tests on " + std::to_string(devices) + " device" + (devices > 1 ? "s" : ""), ""};
  if (!built) return {r.what, plugin_built(name, built).missing};
  if (!with_library) return {r.what, "the " + name + " plugin was built without " + library + " (its header was not found at configure)"};
  Backend* b = load_backend(name);
  if (!b) return r;  // built but not loaded: the cases run and fail
  const size_t found = b->enumerate().size();
  if (found == 0)
    r.missing = "no " + name + " device (" + b->why_none() + ")";
  else if (found < (size_t)devices)
    r.missing = "they need " + std::to_string(devices) + " " + name + " devices; this machine has " + std::to_string(found);
  return r;
}

inline const Requirement& cuda_nccl_gpus(int devices) {
  static const Requirement one = announce(gpus_with("cuda", kCudaBuilt, kCudaNccl, "nccl", 1));
  static const Requirement two = announce(gpus_with("cuda", kCudaBuilt, kCudaNccl, "nccl", 2));
  return devices <= 1 ? one : two;
}
inline const Requirement& rocm_rccl_gpus(int devices) {
  static const Requirement one = announce(gpus_with("rocm", kRocmBuilt, kRocmRccl, "rccl", 1));
  static const Requirement two = announce(gpus_with("rocm", kRocmBuilt, kRocmRccl, "rccl", 2));
  return devices <= 1 ? one : two;
}

inline const Requirement& cuda_plugin() {
  static const Requirement r = announce(plugin_built("cuda", kCudaBuilt));
  return r;
}
inline const Requirement& rocm_plugin() {
  static const Requirement r = announce(plugin_built("rocm", kRocmBuilt));
  return r;
}
inline const Requirement& cuda_gpu() {
  static const Requirement r = announce(gpu_present("cuda", kCudaBuilt));
  return r;
}
inline const Requirement& rocm_gpu() {
  static const Requirement r = announce(gpu_present("rocm", kRocmBuilt));
  return r;
}

}  // namespace tessera::testing
