#pragma once
// A backend discovers devices of one kind. The CPU backend is built in; the
// others are plugins: libtessera-backend-<name>.so exporting
// tessera_backend_register (core/hal/abi.h, which says what both sides must
// share), so that graph/ and engine/ never see a backend type.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/hal/abi.h"
#include "core/hal/device.h"
#include "core/status.h"

namespace tessera {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Devices found; empty with `why_none` set when the driver or device is missing.
  virtual std::vector<DeviceInfo> enumerate() = 0;
  virtual std::string why_none() const { return {}; }
  virtual Expected<std::unique_ptr<Device>> open(int index) = 0;
};

}  // namespace tessera
