#include "backends/builtin.h"

#include <mutex>

#include "backends/cpu/cpu_device.h"
#include "core/hal/registry.h"

namespace tessera {

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& reg = BackendRegistry::global();
    reg.add(std::make_unique<cpu::CpuBackend>());
    reg.load_plugins(default_plugin_dirs());
  });
}

}  // namespace tessera
