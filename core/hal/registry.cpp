#include "core/hal/registry.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/hal/abi_check.h"

namespace tessera {

const char* to_string(MemoryUse u) {
  switch (u) {
    case MemoryUse::weights: return "weights";
    case MemoryUse::activations: return "activations";
    case MemoryUse::kv_cache: return "kv_cache";
    case MemoryUse::step_input: return "step_input";
    case MemoryUse::host_staging: return "host_staging";
  }
  return "?";
}

const char* to_string(StepField f) {
  switch (f) {
    case StepField::none: return "none";
    case StepField::token_ids: return "token_ids";
    case StepField::positions: return "positions";
    case StepField::slot_mapping: return "slot_mapping";
    case StepField::query_start: return "query_start";
    case StepField::seq_lens: return "seq_lens";
    case StepField::block_tables: return "block_tables";
    case StepField::logit_rows: return "logit_rows";
  }
  return "?";
}

BackendRegistry& BackendRegistry::global() {
  static BackendRegistry r;
  return r;
}

void BackendRegistry::add(std::unique_ptr<Backend> backend) {
  if (find(backend->name())) return;
  backends_.push_back(std::move(backend));
}

Backend* BackendRegistry::find(const std::string& name) const {
  for (const auto& b : backends_)
    if (b->name() == name) return b.get();
  return nullptr;
}

std::vector<Backend*> BackendRegistry::all() const {
  std::vector<Backend*> v;
  for (const auto& b : backends_) v.push_back(b.get());
  return v;
}

void BackendRegistry::load_plugins(const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string file = entry.path().filename().string();
      if (file.rfind("libtessera-backend-", 0) != 0 || entry.path().extension() != ".so") continue;
      const std::string path = entry.path().string();
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        load_errors_.push_back(path + ": " + dlerror());
        continue;
      }
      auto fn = reinterpret_cast<tessera_backend_register_fn>(dlsym(h, "tessera_backend_register"));
      const std::string mismatch = fn ? check_registration(fn) : "exports no tessera_backend_register; not a tessera backend";
      if (!mismatch.empty()) {
        load_errors_.push_back(path + ": " + mismatch);
        dlclose(h);
        continue;
      }
      const BackendRegistration* reg = fn(kBackendAbiVersion);
      if (find(reg->name)) continue;  // already registered from an earlier directory
      add(std::unique_ptr<Backend>(reg->create()));
      handles_.push_back(h);  // kept open for the life of the process
    }
  }
}

std::vector<std::string> default_plugin_dirs() {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  if (const char* env = std::getenv("TESSERA_BACKEND_PATH")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) add(s.substr(start, end - start));
      start = end + 1;
    }
  }
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    add(exe.parent_path().string());
    add((exe.parent_path().parent_path() / "lib").string());
  }
  // Beside the library this code is linked into: for a program using an
  // installed libtessera.so, PREFIX/lib/tessera (where `cmake --install` puts
  // plugins) and PREFIX/lib. When the code is linked statically into the
  // executable this is the executable's directory again.
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&default_plugin_dirs), &self) && self.dli_fname) {
    auto lib = std::filesystem::canonical(self.dli_fname, ec);
    if (!ec) {
      add((lib.parent_path() / "tessera").string());
      add(lib.parent_path().string());
    }
  }
  return dirs;
}

}  // namespace tessera
