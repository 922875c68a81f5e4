#include "backends/cuda/gpu_context.h"

#include <cstdint>
#include <sstream>

#include "backends/cuda/gpu_status.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu {

std::vector<std::string> built_targets() {
  // TESSERA_GPU_TARGETS: "sm_80,sm_86" or "gfx908,gfx90a", from CMake.
  std::vector<std::string> out;
  std::stringstream s(TESSERA_GPU_TARGETS);
  for (std::string t; std::getline(s, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}

bool arch_runs(const std::string& built, const std::string& device) {
  if (built.rfind("sm_", 0) == 0 && device.rfind("sm_", 0) == 0) {
    // sm_<major><minor>: the last digit is the minor ("sm_90", "sm_120").
    if (built.size() < 5 || device.size() < 5) return false;
    const std::string bmaj = built.substr(3, built.size() - 4), dmaj = device.substr(3, device.size() - 4);
    return bmaj == dmaj && built.back() <= device.back();
  }
  return built == device;
}

DeviceInfo describe(int ordinal, const gpuDeviceProp_t& p) {
  DeviceInfo d;
  d.name = p.name;
  d.backend = TESSERA_GPU_BACKEND;
  d.index = ordinal;
#if defined(TESSERA_GPU_HIP)
  std::string arch = p.gcnArchName;  // "gfx90a:sramecc+:xnack-"
  d.arch = arch.substr(0, arch.find(':'));
  const bool matrix = d.arch == "gfx908" || d.arch == "gfx90a" || d.arch.rfind("gfx94", 0) == 0;
  if (matrix) d.features.push_back("mfma");
#else
  d.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
  if (p.major >= 8) d.features.push_back("mma_sync");
  if (p.major >= 9) d.features.push_back("wgmma");
#endif
  d.kind = p.integrated ? DeviceKind::gpu_integrated : DeviceKind::gpu_discrete;
  d.memory_bytes = p.totalGlobalMem;
  d.compute_units = (uint32_t)p.multiProcessorCount;
  d.subgroup_size = (uint32_t)p.warpSize;
  d.simd_width_bits = (uint32_t)p.warpSize * 32;
  d.l2_bytes = (uint64_t)p.l2CacheSize;
  d.last_level_cache_bytes = d.l2_bytes;
  d.shared_memory_per_group_bytes = p.sharedMemPerBlock;
  d.max_workgroup_invocations = (uint32_t)p.maxThreadsPerBlock;
  d.features.insert(d.features.end(), {"f16", "bf16", "int8"});
  // Where the matrix units go unused, `tessera devices` shows it here.
  d.features.push_back(kernels::matmul_gemm_path(p));
  // Copy bandwidth and matrix rate are measured by `tessera bench`, not assumed here.
  d.roofs.source = RoofSource::unknown;
  d.kernel_isa = d.arch;
  return d;
}

Expected<std::shared_ptr<GpuContext>> GpuContext::open(int ordinal, const DeviceInfo& info) {
  bool runs = false;
  std::string built;
  for (const std::string& t : built_targets()) {
    runs = runs || arch_runs(t, info.arch);
    built += (built.empty() ? "" : ", ") + t;
  }
  if (!runs)
    return unsupported(std::string(TESSERA_GPU_BACKEND ": device ") + std::to_string(ordinal) + " (" + info.name + ") is " +
                       info.arch + "; this build has kernels for " + built +
                       " only (rebuild with its arch in TESSERA_CUDA_ARCHITECTURES / TESSERA_ROCM_TARGETS)");
  std::shared_ptr<GpuContext> ctx(new GpuContext(ordinal, info));
  TS_TRY(ctx->make_current());
  if (const gpuError_t e = kernels::check_kernel_image(); e != gpuSuccess)
    return unsupported(gpu_failed("gpuFuncGetAttributes(image_probe)", e).message() + ": this build's kernels (" + built +
                       ") do not load on " + info.arch);
  kernels::prepare_launchers();
  TS_GPU_TRY(gpuStreamCreateWithFlags(&ctx->alloc_stream_, gpuStreamNonBlocking));
  gpuMemPool_t pool = nullptr;
  TS_GPU_TRY(gpuDeviceGetDefaultMemPool(&pool, ordinal));
  uint64_t keep = UINT64_MAX;  // never trim the pool behind our back at a synchronize
  TS_GPU_TRY(gpuMemPoolSetAttribute(pool, gpuMemPoolAttrReleaseThreshold, &keep));
  return ctx;
}

GpuContext::~GpuContext() {
  if (alloc_stream_) {
    (void)make_current();
    (void)gpuStreamSynchronize(alloc_stream_);
    (void)gpuStreamDestroy(alloc_stream_);
  }
}

Status GpuContext::make_current() const {
  TS_GPU_TRY(gpuSetDevice(ordinal_));
  return Status::ok();
}

}  // namespace tessera::gpu
