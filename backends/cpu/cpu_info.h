#pragma once
#include <cstdint>
#include <string>

#include "core/hal/device_info.h"
#include "core/status.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tessera::cpu {

// This machine as the CPU backend sees it: model name, cores, memory, caches
// (from /proc and /sys), the ISA the kernels chose, and the roofs measured
// once per process (backends/cpu/cpu_roofs.h).
DeviceInfo probe_cpu_info(int threads);

// The x86-64 level the chosen kernel family needs ("x86-64-v4+avx512vnni",
// "x86-64-v3", "x86-64"), or the machine's name where it is not x86-64:
// DeviceInfo::arch for the CPU.
std::string cpu_arch(kernels::cpu::Isa isa);

// MemAvailable from /proc/meminfo: what the kernel estimates can be
// allocated without swapping (free plus reclaimable page cache).
Expected<uint64_t> available_host_memory();

}  // namespace tessera::cpu
