// inspect_model: a model file's container, shapes, tensors and metadata.
#include "engine/api/model_impl.h"
#include "engine/formats/gguf.h"
#include "engine/models/load_model.h"
#include "tessera/model_file.h"

namespace tessera {

Expected<ModelFileInfo> inspect_model(const std::string& path) {
  TS_ASSIGN_OR_RETURN(ModelWeights m, load_model(path));
  ModelFileInfo info;
  info.path = path;
  info.format = m.format;
  info.container = m.format;
  if (m.format == "gguf") {
    // load_model has read the header already; this second look is only for the container's own fields.
    auto g = GgufFile::open(path);
    if (g)
      info.container = "GGUF v" + std::to_string(g->version()) + ", alignment " + std::to_string(g->alignment()) + ", " +
                       std::to_string(g->kvs().size()) + " metadata keys";
  } else if (m.format == "llama2c") {
    info.container = "llama2.c checkpoint";
  } else if (m.format == "hf") {
    info.container = "Hugging Face folder (config.json, safetensors), model_type " + m.metadata["hf.model_type"];
  }
  info.config = to_model_config(m.config);
  for (const WeightTensor& t : m.tensors) {
    TensorInfo ti;
    ti.name = t.name;
    ti.shape.assign(t.desc.shape.dims.begin(), t.desc.shape.dims.begin() + t.desc.shape.rank);
    ti.dtype = std::string(name(t.desc.dtype));
    ti.elements = (uint64_t)t.desc.shape.numel();
    ti.bytes = t.data.size();
    info.tensors.push_back(std::move(ti));
  }
  info.metadata.assign(m.metadata.begin(), m.metadata.end());
  info.has_tokenizer = m.tokenizer.has_value();
  return info;
}

}  // namespace tessera
