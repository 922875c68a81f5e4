#pragma once
// The registry's side of core/hal/abi.h: whether a plugin's registration can
// be used by this build of tessera, read no further than is safe.
#include <string>

#include "core/hal/abi.h"

namespace tessera {

// Calls the plugin's tessera_backend_register and checks the answer: empty
// when the plugin matches this tessera (ABI version, headers hash, build
// fingerprint, and a name and create function); otherwise one line, without
// the file name, that gives both sides' values and ends "rebuild the plugin".
std::string check_registration(tessera_backend_register_fn register_fn);

// "0123456789abcdef": how a headers hash is printed.
std::string headers_hash_hex(uint64_t hash);

}  // namespace tessera
