#pragma once
// Every backend known to this process: built-in ones added at start-up, plugins
// found next to the executable or in TESSERA_BACKEND_PATH.
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
// executable's directory, and ../lib beside it.
std::vector<std::string> default_plugin_dirs();

}  // namespace tessera
