#pragma once
// Compute pipelines, created once per process and device from the embedded
// SPIR-V. Every shader uses one descriptor set layout (binding 0: the step
// parameters; bindings 1..8: the dispatch's tensors, all storage buffers)
// and one 128-byte push-constant range, so one pipeline layout serves all.
// Variants are few on purpose: lavapipe compiles each pipeline with LLVM
// when it is created.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/vulkan/vk_api.h"

namespace tessera::vulkan {

class DeviceContext;

inline constexpr uint32_t kMaxTensorBindings = 8;
inline constexpr uint32_t kPushConstantBytes = 128;

class PipelineCache {
 public:
  static Expected<std::unique_ptr<PipelineCache>> create(DeviceContext& ctx);
  ~PipelineCache();

  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  VkPipelineLayout layout() const { return layout_; }
  // The pipeline of shader `stem` (kernels/vulkan/<stem>.comp) in the
  // device's variant, specialized with `spec` (constant_id 0, 1, ...).
  Expected<VkPipeline> get(const std::string& stem, const std::vector<uint32_t>& spec);
  // The SPIR-V module name `get` uses for `stem` specialized with `spec` on
  // this device: "<stem>__<variant>", or "<stem>__<variant>__wt<spec[0]>"
  // for a shader built per weight type.
  std::string module_name(const std::string& stem, const std::vector<uint32_t>& spec = {}) const;

  // Pipelines created so far, and the milliseconds the driver took for them.
  int created() const;
  double creation_ms() const;

 private:
  explicit PipelineCache(DeviceContext& ctx) : ctx_(ctx) {}
  DeviceContext& ctx_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::vector<uint32_t>>, VkPipeline> pipelines_;
  double creation_ms_ = 0;
  bool log_ = false;
};

}  // namespace tessera::vulkan
