// The plugin's one exported symbol (core/hal/backend.h).
#include "backends/vulkan/device.h"

namespace {

tessera::Backend* create_vulkan_backend() { return new tessera::vulkan::VulkanBackend(); }

const tessera::BackendRegistration kRegistration = tessera::make_backend_registration("vulkan", create_vulkan_backend);

}  // namespace

extern "C" __attribute__((visibility("default"))) const tessera::BackendRegistration* tessera_backend_register(uint32_t) {
  return &kRegistration;  // whatever the host speaks: the host compares (core/hal/abi.h)
}
