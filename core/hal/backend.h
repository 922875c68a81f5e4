#pragma once
// A backend discovers devices of one kind. The CPU backend is built in; the
// others are plugins: libtessera-backend-<name>.so exporting
//   extern "C" const tessera::BackendRegistration* tessera_backend_register(uint32_t abi_version);
// so that graph/ and engine/ never see a backend type.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/hal/device.h"
#include "core/status.h"

namespace tessera {

// 2: DeviceInfo gained index and arch, Device gained free_memory().
inline constexpr uint32_t kBackendAbiVersion = 2;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Devices found; empty with `why_none` set when the driver or device is missing.
  virtual std::vector<DeviceInfo> enumerate() = 0;
  virtual std::string why_none() const { return {}; }
  virtual Expected<std::unique_ptr<Device>> open(int index) = 0;
};

struct BackendRegistration {
  uint32_t abi_version;
  const char* name;
  Backend* (*create)();  // ownership passes to the caller
};

}  // namespace tessera

extern "C" {
using tessera_backend_register_fn = const tessera::BackendRegistration* (*)(uint32_t abi_version);
}
