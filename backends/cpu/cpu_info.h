#pragma once
#include "core/hal/device_info.h"

namespace tessera::cpu {

// This machine as the CPU backend sees it: model name, cores, memory, caches
// (from /proc and /sys), the ISA the kernels chose, and the roofs measured
// once per process (backends/cpu/cpu_roofs.h).
DeviceInfo probe_cpu_info(int threads);

}  // namespace tessera::cpu
