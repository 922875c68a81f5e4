// The skeleton backend: the smallest thing that is a Tessera backend. It
// builds as a plugin, registers, enumerates one device, and reports every op
// unsupported, with the reason. Copy this folder to start a new backend and
// replace each "unsupported" with the real thing (docs/backends.md).
#include <memory>
#include <string>

#include "core/hal/backend.h"

namespace tessera::skeleton {

namespace {

constexpr const char* kWhy = "the skeleton backend implements no kernels";

class SkeletonKernelTable final : public KernelTable {
 public:
  KernelChoice query(const OpQuery& q) const override {
    return {false, "", std::string(kWhy) + " (" + std::string(name(q.op)) + ")"};
  }
};

class SkeletonDevice final : public Device {
 public:
  SkeletonDevice() {
    info_.name = "skeleton (runs nothing)";
    info_.backend = "skeleton";
    info_.kind = DeviceKind::cpu_emulated;
  }
  const DeviceInfo& info() const override { return info_; }
  const KernelTable& kernels() const override { return table_; }
  Expected<std::unique_ptr<Buffer>> allocate(uint64_t, MemoryUse) override { return unsupported(std::string("allocate: ") + kWhy); }
  Expected<std::unique_ptr<Buffer>> import_weights(std::span<const std::byte>) override {
    return unsupported(std::string("import_weights: ") + kWhy);
  }
  Expected<std::unique_ptr<Stream>> create_stream() override { return unsupported(std::string("create_stream: ") + kWhy); }
  Expected<std::unique_ptr<Event>> create_event() override { return unsupported(std::string("create_event: ") + kWhy); }
  Expected<std::unique_ptr<Executable>> compile(const Plan&, std::span<Buffer* const>) override {
    return unsupported(std::string("compile: ") + kWhy);
  }

 private:
  DeviceInfo info_;
  SkeletonKernelTable table_;
};

class SkeletonBackend final : public Backend {
 public:
  std::string name() const override { return "skeleton"; }
  std::vector<DeviceInfo> enumerate() override { return {SkeletonDevice().info()}; }
  Expected<std::unique_ptr<Device>> open(int index) override {
    if (index != 0) return not_found("skeleton backend: device " + std::to_string(index) + " does not exist (only device 0)");
    return std::unique_ptr<Device>(new SkeletonDevice());
  }
};

Backend* create() { return new SkeletonBackend(); }

}  // namespace

}  // namespace tessera::skeleton

extern "C" __attribute__((visibility("default"))) const tessera::BackendRegistration* tessera_backend_register(uint32_t) {
  // Returned whatever version the host speaks: the host compares (core/hal/abi.h).
  static const tessera::BackendRegistration reg = tessera::make_backend_registration("skeleton", &tessera::skeleton::create);
  return &reg;
}
