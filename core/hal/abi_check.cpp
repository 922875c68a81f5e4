#include "core/hal/abi_check.h"

#include <cstdio>
#include <cstring>

namespace tessera {

namespace {

// ABI 1's registration: {uint32_t abi_version; const char* name; Backend* (*create)();},
// returned only when asked for version 1. Its first field is all we read.
constexpr uint32_t kAbiWithoutMagic = 1;

std::string side(uint32_t version, const std::string& hash) {
  return "ABI " + std::to_string(version) + " (headers " + hash + ")";
}

std::string version_mismatch(uint32_t plugin_version, const std::string& plugin_hash) {
  return "built for backend " + side(plugin_version, plugin_hash) + ", this tessera speaks " +
         side(kBackendAbiVersion, headers_hash_hex(kBackendAbiHeadersHash)) + "; rebuild the plugin";
}

struct FingerprintField {
  const char* label;
  uint32_t BuildFingerprint::*field;
};

constexpr FingerprintField kFingerprintFields[] = {
    {"compiler", &BuildFingerprint::compiler},
    {"compiler major version", &BuildFingerprint::compiler_major},
    {"standard library", &BuildFingerprint::stdlib},
    {"standard library ABI", &BuildFingerprint::stdlib_abi},
    {"_GLIBCXX_DEBUG", &BuildFingerprint::stdlib_debug},
    {"pointer bytes", &BuildFingerprint::pointer_bytes},
    {"sizeof(std::string)", &BuildFingerprint::sizeof_string},
    {"sizeof(std::vector)", &BuildFingerprint::sizeof_vector},
    {"sizeof(Status)", &BuildFingerprint::sizeof_status},
    {"sizeof(DeviceInfo)", &BuildFingerprint::sizeof_device_info},
    {"sizeof(StepArgs)", &BuildFingerprint::sizeof_step_args},
    {"sizeof(Plan)", &BuildFingerprint::sizeof_plan},
    {"sizeof(Dispatch)", &BuildFingerprint::sizeof_dispatch},
};

std::string field_value(const FingerprintField& f, const BuildFingerprint& b) {
  const uint32_t v = b.*f.field;
  if (f.field == &BuildFingerprint::compiler) return v == 1 ? "gcc" : v == 2 ? "clang" : "other";
  if (f.field == &BuildFingerprint::stdlib) return v == 1 ? "libstdc++" : v == 2 ? "libc++" : "other";
  return std::to_string(v);
}

// Only the fields that differ, "label value, label value", for each side.
std::string fingerprint_mismatch(const BuildFingerprint& plugin, const BuildFingerprint& host) {
  std::string theirs, ours;
  for (const auto& f : kFingerprintFields) {
    if (plugin.*f.field == host.*f.field) continue;
    const std::string sep = theirs.empty() ? "" : ", ";
    theirs += sep + f.label + " " + field_value(f, plugin);
    ours += sep + f.label + " " + field_value(f, host);
  }
  if (theirs.empty()) return {};
  return "built with " + theirs + "; this tessera with " + ours + "; rebuild the plugin with the same compiler and flags";
}

}  // namespace

std::string headers_hash_hex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)hash);
  return buf;
}

std::string check_registration(tessera_backend_register_fn register_fn) {
  const BackendRegistration* reg = register_fn(kBackendAbiVersion);
  if (!reg) {
    // An ABI 1 plugin answers only the version it speaks.
    const void* old = register_fn(kAbiWithoutMagic);
    uint32_t first = 0;
    if (old) std::memcpy(&first, old, sizeof first);
    if (first == kAbiWithoutMagic) return version_mismatch(kAbiWithoutMagic, "not recorded");
    return "tessera_backend_register returned no registration; rebuild the plugin";
  }
  // The magic first: a registration without it is read no further.
  uint32_t magic = 0;
  std::memcpy(&magic, reg, sizeof magic);
  if (magic != kBackendRegistrationMagic) {
    return "tessera_backend_register returned something that is not a tessera backend registration (begins " +
           std::to_string(magic) + "); rebuild the plugin";
  }
  if (reg->abi_version != kBackendAbiVersion || reg->headers_hash != kBackendAbiHeadersHash)
    return version_mismatch(reg->abi_version, headers_hash_hex(reg->headers_hash));
  if (reg->struct_size != sizeof(BackendRegistration)) {
    return "built with a " + std::to_string(reg->struct_size) + "-byte registration, this tessera's is " +
           std::to_string(sizeof(BackendRegistration)) + " bytes; rebuild the plugin";
  }
  if (std::string m = fingerprint_mismatch(reg->build, this_build_fingerprint()); !m.empty()) return m;
  if (!reg->name || !reg->name[0] || !reg->create) return "the registration has no name or no create function; rebuild the plugin";
  return {};
}

}  // namespace tessera
