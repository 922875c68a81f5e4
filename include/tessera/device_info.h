#pragma once
// What a device is and how fast it is: what `tessera devices` prints,
// Model::device() returns, and placement, tiling and bench reason about.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

enum class DeviceKind : uint8_t { cpu, gpu_discrete, gpu_integrated, cpu_emulated };
inline const char* to_string(DeviceKind k) {
  switch (k) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::gpu_discrete: return "discrete gpu";
    case DeviceKind::gpu_integrated: return "integrated gpu";
    case DeviceKind::cpu_emulated: return "cpu (emulated gpu)";
  }
  return "?";
}

// measured: by tessera bench; measured_at_open: a short probe when the
// device opened (CPU); nominal: fixed figures from the ISA and core count,
// for runs that must tile the same way every time (TESSERA_CPU_ROOFS=nominal).
enum class RoofSource : uint8_t { unknown, datasheet, measured, measured_at_open, nominal };
inline const char* to_string(RoofSource s) {
  switch (s) {
    case RoofSource::unknown: return "unknown";
    case RoofSource::datasheet: return "datasheet";
    case RoofSource::measured: return "measured";
    case RoofSource::measured_at_open: return "measured at open";
    case RoofSource::nominal: return "nominal";
  }
  return "?";
}

// Peak rates the device can sustain; 0 where not known.
struct Roofs {
  double read_GBps = 0;     // streaming read bandwidth from device memory
  double f32_GFLOPs = 0;    // fused multiply-add counted as 2
  double bf16_GFLOPs = 0;   // bf16 pair dots into f32 (AVX512-BF16 vdpbf16ps); 0 where there are none
  double int8_GOPs = 0;
  RoofSource source = RoofSource::unknown;
};

struct DeviceInfo {
  std::string name;     // "AMD EPYC (2 threads)", "NVIDIA H200"
  std::string backend;  // "cpu", "vulkan", ...
  int index = 0;        // its position in its backend's enumerate(): the N of "vulkan:N"
  // What code for it is built for: on the CPU the x86-64 level the chosen
  // kernels need ("x86-64-v4+avx512vnni", "x86-64-v3", "x86-64"; the
  // machine name elsewhere), on Vulkan the driver for a CPU implementation
  // ("lavapipe") else vendor:device id ("nvidia:0x2335"); CUDA would say
  // "sm_90", ROCm "gfx90a". docs/backends.md lists them.
  std::string arch;
  DeviceKind kind = DeviceKind::cpu;
  uint64_t memory_bytes = 0;
  uint32_t compute_units = 0;    // cores / SMs / CUs
  uint32_t simd_width_bits = 0;  // widest vector the kernels use
  uint32_t subgroup_size = 0;    // GPU wave/warp; 0 on CPU
  uint64_t l1_bytes = 0, l2_bytes = 0, last_level_cache_bytes = 0;
  uint64_t shared_memory_per_group_bytes = 0;
  uint32_t max_workgroup_invocations = 0;  // GPU: most invocations one (1-D) workgroup may have; 0 on CPU
  Roofs roofs;
  std::vector<std::string> features;  // "avx2", "avx512_vnni", "f16", ...
  std::string kernel_isa;             // which kernel family was chosen, e.g. "avx512_vnni"
  // Its steps tell the caller as each KV pool is written (StepArgs::kv_written),
  // while later layers still compute: the CPU, whose dispatches run at the call.
  bool notifies_kv_writes = false;
};

}  // namespace tessera
