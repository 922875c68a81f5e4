// The plugin's one exported symbol (core/hal/backend.h).
#include "backends/vulkan/device.h"

namespace {

tessera::Backend* create_vulkan_backend() { return new tessera::vulkan::VulkanBackend(); }

const tessera::BackendRegistration kRegistration{tessera::kBackendAbiVersion, "vulkan", create_vulkan_backend};

}  // namespace

extern "C" __attribute__((visibility("default"))) const tessera::BackendRegistration* tessera_backend_register(uint32_t abi_version) {
  return abi_version == tessera::kBackendAbiVersion ? &kRegistration : nullptr;
}
