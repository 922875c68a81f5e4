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
