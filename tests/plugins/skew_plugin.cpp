// A backend plugin built as one from another version or another build of
// tessera would be (tests/cli/backend_abi_skew_test.cpp). Compiled once per
// kind of skew, chosen by a definition:
//   TESSERA_SKEW_NEWER_ABI  registers for the next ABI version, other headers
//   TESSERA_SKEW_HEADERS    the same ABI version, other headers (a missed bump)
//   TESSERA_SKEW_ABI_ONE    speaks ABI 1's protocol: null unless asked for 1
//   none of them            honest; built with -D_GLIBCXX_USE_CXX11_ABI=0, so
//                           its std::string is not this tessera's
// The registry must refuse each in one line, before calling anything but
// tessera_backend_register. It uses nothing from tessera_core, so that it
// links whatever its standard library layout.
#include <memory>
#include <string>

#include "core/hal/backend.h"

namespace {

class SkewBackend final : public tessera::Backend {
 public:
  std::string name() const override { return "skew"; }
  std::vector<tessera::DeviceInfo> enumerate() override { return {}; }
  std::string why_none() const override { return "this plugin exists to be refused; it was loaded"; }
  tessera::Expected<std::unique_ptr<tessera::Device>> open(int) override { return tessera::not_found("skew: no device"); }
};

tessera::Backend* create() { return new SkewBackend(); }

tessera::BackendRegistration registration() {
  auto r = tessera::make_backend_registration("skew", &create);
#if defined(TESSERA_SKEW_NEWER_ABI)
  r.abi_version = tessera::kBackendAbiVersion + 1;
  r.headers_hash = 0x0123456789abcdefull;
#elif defined(TESSERA_SKEW_HEADERS)
  r.headers_hash = tessera::kBackendAbiHeadersHash ^ 1;
#endif
  return r;
}

}  // namespace

#if defined(TESSERA_SKEW_ABI_ONE)
// ABI 1's registration, as its plugins laid it out.
struct AbiOneRegistration {
  uint32_t abi_version;
  const char* name;
  tessera::Backend* (*create)();
};

extern "C" __attribute__((visibility("default"))) const AbiOneRegistration* tessera_backend_register(uint32_t abi_version) {
  static const AbiOneRegistration reg{1, "skew", &create};
  return abi_version == 1 ? &reg : nullptr;
}
#else
extern "C" __attribute__((visibility("default"))) const tessera::BackendRegistration* tessera_backend_register(uint32_t) {
  static const tessera::BackendRegistration reg = registration();
  return &reg;
}
#endif
