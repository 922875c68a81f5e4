// Opens NCCL (CUDA) or RCCL (ROCm) at run time: gpu_nccl.h says why it is
// not linked.
#include "backends/cuda/gpu_nccl.h"

#if defined(TESSERA_GPU_NCCL)
#include <dlfcn.h>

#include <mutex>
#include <vector>

namespace tessera::gpu {

namespace {

struct Loaded {
  NcclApi api;
  Status status = Status::ok();
};

template <typename F>
bool find(void* lib, const char* symbol, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!out) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  return out != nullptr;
}

Loaded load() {
  Loaded l;
  std::vector<std::string> tried = {TESSERA_GPU_COLLECTIVES_LIBRARY};
#if defined(TESSERA_NCCL_LIBRARY)
  tried.push_back(TESSERA_NCCL_LIBRARY);  // where CMake found it, for a library outside the loader's path
#endif
  void* lib = nullptr;
  std::string why;
  for (const std::string& name : tried) {
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      l.api.library = name;
      break;
    }
    const char* e = dlerror();
    why += (why.empty() ? "" : "; ") + std::string(e ? e : name + ": not loadable");
  }
  if (!lib) {
    l.status = unsupported(std::string(TESSERA_GPU_BACKEND ": cannot load " TESSERA_GPU_COLLECTIVES " (") + why + ")");
    return l;
  }
  NcclApi& a = l.api;
  std::string missing;
  find(lib, "ncclGetVersion", a.get_version, missing);
  find(lib, "ncclGetErrorString", a.get_error_string, missing);
  find(lib, "ncclGetUniqueId", a.get_unique_id, missing);
  find(lib, "ncclCommInitRank", a.comm_init_rank, missing);
  find(lib, "ncclCommDestroy", a.comm_destroy, missing);
  find(lib, "ncclCommGetAsyncError", a.comm_get_async_error, missing);
  find(lib, "ncclAllReduce", a.all_reduce, missing);
  find(lib, "ncclAllGather", a.all_gather, missing);
  find(lib, "ncclBroadcast", a.broadcast, missing);
  find(lib, "ncclSend", a.send, missing);
  find(lib, "ncclRecv", a.recv, missing);
  find(lib, "ncclGroupStart", a.group_start, missing);
  find(lib, "ncclGroupEnd", a.group_end, missing);
  std::string optional;
  find(lib, "ncclGetLastError", a.get_last_error, optional);
  if (!missing.empty()) {
    l.status = unsupported(std::string(TESSERA_GPU_BACKEND ": ") + a.library + " lacks " + missing +
                           " (point-to-point needs NCCL 2.7 or later)");
    return l;
  }
  if (a.get_version(&a.version) != ncclSuccess) a.version = 0;
  // The header's major version fixes the structs and enums compiled in here (ncclUniqueId, ncclDataType_t).
  if (a.version / 10000 != NCCL_VERSION_CODE / 10000)
    l.status = unsupported(std::string(TESSERA_GPU_BACKEND ": ") + a.library + " is version " + std::to_string(a.version) +
                           "; this plugin was built against " + std::to_string(NCCL_VERSION_CODE) + " (another major)");
  return l;
}

std::string version_text(int v) {
  // 2.28.9 is 22809 since NCCL 2.9; 2.8.4 was 2804.
  const int major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10, patch = v % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

Expected<const NcclApi*> nccl_api() {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = load(); });
  if (!loaded.status.is_ok()) return loaded.status;
  return &loaded.api;
}

Status nccl_failed(const NcclApi& api, const char* call, ncclResult_t r, ncclComm_t comm) {
  // The library's own text already says which NCCL_DEBUG level tells more.
  std::string what = std::string(TESSERA_GPU_BACKEND ": ") + call + " failed (" +
#if defined(TESSERA_GPU_HIP)
                     "RCCL "
#else
                     "NCCL "
#endif
                     + version_text(api.version) + "): " + api.get_error_string(r);
  const char* last = api.get_last_error ? api.get_last_error(comm) : nullptr;
  if (last && *last) what += "; " + std::string(last);
  return r == ncclInvalidArgument || r == ncclInvalidUsage ? invalid_argument(what) : internal_error(what);
}

}  // namespace tessera::gpu
#endif
