#pragma once
// A device named as backend plus index ("vulkan:1", "cpu:0"): what
// placement, the IR's @DEVICE annotation, the runner's device slots and
// --place use, so that two devices of one backend can hold parts of one
// model. The index is the device's position in its backend's enumerate().
#include <compare>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera {

struct DeviceId {
  std::string backend;  // "cpu", "vulkan", ...; empty: no device (an unplaced node)
  int index = 0;

  bool empty() const { return backend.empty(); }
  // "vulkan:1"; "" when empty.
  std::string to_string() const;
  auto operator<=>(const DeviceId&) const = default;
  bool operator==(const DeviceId&) const = default;
};

// "vulkan:1", or a bare backend name meaning its device 0 ("vulkan", as the
// IR wrote devices before they had indices). The backend is letters, digits,
// '_' and '-'; the index a decimal number from 0. An error names `what` (the
// flag or field) and the text.
Expected<DeviceId> parse_device_id(std::string_view text, std::string_view what = "device");

}  // namespace tessera
