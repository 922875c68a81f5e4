#pragma once
// Every backend known to this process: built-in ones added at start-up, plugins
// found in TESSERA_BACKEND_PATH, next to the executable or next to libtessera.so.
#include <memory>
#include <string>
#include <vector>

#include "core/hal/backend.h"

namespace tessera {

class BackendRegistry {
 public:
  static BackendRegistry& global();

  void add(std::unique_ptr<Backend> backend);
  Backend* find(const std::string& name) const;
  std::vector<Backend*> all() const;

  // dlopen()s libtessera-backend-*.so from each directory; a plugin that
  // fails to load is recorded (see load_errors) rather than fatal.
  void load_plugins(const std::vector<std::string>& dirs);
  const std::vector<std::string>& load_errors() const { return load_errors_; }

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<std::string> load_errors_;
  std::vector<void*> handles_;
};

// Default plugin directories: $TESSERA_BACKEND_PATH (colon-separated), the
// executable's directory, ../lib beside it, and beside the library holding
// this code (libtessera.so): its directory's tessera/ subdirectory, then the
// directory itself.
std::vector<std::string> default_plugin_dirs();

}  // namespace tessera
