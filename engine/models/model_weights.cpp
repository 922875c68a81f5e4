#include "engine/models/model_weights.h"

namespace tessera {

const WeightTensor* ModelWeights::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Expected<const WeightTensor*> ModelWeights::require(const std::string& name, const Shape& shape) const {
  const WeightTensor* t = find(name);
  if (!t) return not_found(source + ": tensor '" + name + "' is missing");
  if (!(t->desc.shape == shape))
    return invalid_argument(source + ": tensor '" + name + "': shape " + t->desc.shape.to_string() +
                            "; expected " + shape.to_string());
  return t;
}

uint64_t ModelWeights::total_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.data.size();
  return n;
}

void ModelWeights::release_copied(std::span<const std::byte> bytes) const {
  for (const auto& m : mappings)
    if (m && m->release(bytes)) return;
}

}  // namespace tessera
