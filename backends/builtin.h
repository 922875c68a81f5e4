#pragma once

namespace tessera {

// Registers the CPU backend and loads the plugin backends found in the
// default directories (core/hal/registry.h). Safe to call more than once.
void register_builtin_backends();

}  // namespace tessera
