// list_devices: every registered backend (built-in and plugins) and its devices.
#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "engine/runtime/model_runner.h"
#include "tessera/tessera.h"

namespace tessera {

std::vector<BackendReport> list_devices() {
  register_builtin_backends();
  std::vector<BackendReport> out;
  for (Backend* b : BackendRegistry::global().all()) {
    BackendReport r{b->name(), b->enumerate(), {}};
    if (r.devices.empty()) r.why_none = b->why_none();
    out.push_back(std::move(r));
  }
  return out;
}

Expected<uint64_t> free_device_memory(const std::string& backend, int index) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<Device> d, open_device(backend, index));
  return d->free_memory();
}

std::vector<std::string> backend_load_errors() {
  register_builtin_backends();
  return BackendRegistry::global().load_errors();
}

}  // namespace tessera
