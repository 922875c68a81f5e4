#pragma once
// The SPIR-V modules compiled from kernels/vulkan/*.comp at build time and
// embedded in the plugin (embed_spirv.cmake writes the table).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tessera::vulkan {

struct EmbeddedShader {
  const char* name;  // "<stem>__<variant>", e.g. "rms_norm__subgroup"
  const uint32_t* words;
  size_t word_count;
};

extern const EmbeddedShader kEmbeddedShaders[];
extern const size_t kEmbeddedShaderCount;

// The module named `name`, or an empty span when the build has none.
inline std::span<const uint32_t> find_shader(std::string_view name) {
  for (size_t i = 0; i < kEmbeddedShaderCount; ++i)
    if (name == kEmbeddedShaders[i].name) return {kEmbeddedShaders[i].words, kEmbeddedShaders[i].word_count};
  return {};
}

}  // namespace tessera::vulkan
