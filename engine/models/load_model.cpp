#include "engine/models/load_model.h"

#include <cstring>
#include <filesystem>

#include "core/mapped_file.h"
#include "engine/models/gguf_model_loader.h"
#include "engine/models/hf_loader.h"
#include "engine/models/llama2c_loader.h"

namespace tessera {

Expected<ModelWeights> load_model(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return load_hf_model(path);  // says so when config.json is missing
  bool is_gguf = false;
  {
    TS_ASSIGN_OR_RETURN(const MappedFile file, MappedFile::open(path));
    if (file.size() == 0)
      return invalid_argument(path + ": file is empty; expected a GGUF file or a llama2.c checkpoint");
    is_gguf = file.size() >= 4 && std::memcmp(file.data(), "GGUF", 4) == 0;
  }
  return is_gguf ? load_gguf_model(path) : load_llama2c(path);
}

}  // namespace tessera
