#include "backends/vulkan/pipelines.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "backends/vulkan/context.h"
#include "backends/vulkan/shader_library.h"

namespace tessera::vulkan {

Expected<std::unique_ptr<PipelineCache>> PipelineCache::create(DeviceContext& ctx) {
  std::unique_ptr<PipelineCache> c(new PipelineCache(ctx));
  const char* log = std::getenv("TESSERA_VULKAN_LOG");
  c->log_ = log && *log && *log != '0';
  const VulkanApi& vk = ctx.vk();
  if (ctx.limits().maxPushConstantsSize < kPushConstantBytes)
    return unsupported("vulkan: the device has " + std::to_string(ctx.limits().maxPushConstantsSize) +
                       " bytes of push constants; the shaders need " + std::to_string(kPushConstantBytes));

  VkDescriptorSetLayoutBinding bindings[kMaxTensorBindings + 1]{};
  for (uint32_t i = 0; i <= kMaxTensorBindings; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo sci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sci.bindingCount = kMaxTensorBindings + 1;
  sci.pBindings = bindings;
  TS_VK_TRY(vk.vkCreateDescriptorSetLayout(ctx.device(), &sci, nullptr, &c->set_layout_), "vkCreateDescriptorSetLayout");

  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  lci.setLayoutCount = 1;
  lci.pSetLayouts = &c->set_layout_;
  lci.pushConstantRangeCount = 1;
  lci.pPushConstantRanges = &push;
  TS_VK_TRY(vk.vkCreatePipelineLayout(ctx.device(), &lci, nullptr, &c->layout_), "vkCreatePipelineLayout");
  return c;
}

PipelineCache::~PipelineCache() {
  const VulkanApi& vk = ctx_.vk();
  for (auto& [key, p] : pipelines_) vk.vkDestroyPipeline(ctx_.device(), p, nullptr);
  if (layout_) vk.vkDestroyPipelineLayout(ctx_.device(), layout_, nullptr);
  if (set_layout_) vk.vkDestroyDescriptorSetLayout(ctx_.device(), set_layout_, nullptr);
}

std::string PipelineCache::module_name(const std::string& stem, const std::vector<uint32_t>& spec) const {
  // A shader built per weight type (kernels/vulkan/matmul_*.comp) has a
  // module per value of constant 0 instead of one generic module (without
  // `spec`, the first type's stands for them all).
  auto typed = [&](const std::string& base) {
    if (find_shader(base).empty()) return base + "__wt" + std::to_string(spec.empty() ? 0 : spec[0]);
    return base;
  };
  // On CPU implementations one weight row per invocation beats the subgroup
  // gemv (lavapipe, 8192x2048 q8_0: 12 vs 17 ms of CPU time).
  if (stem == "matmul_gemv" && ctx_.physical().info.kind == DeviceKind::cpu_emulated) return typed(stem + "__portable");
  const std::string preferred = typed(stem + "__" + shader_variant(ctx_.physical()));
  // Shaders without reductions have only the portable variant.
  return find_shader(preferred).empty() ? typed(stem + "__portable") : preferred;
}

Expected<VkPipeline> PipelineCache::get(const std::string& stem, const std::vector<uint32_t>& spec) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_pair(stem, spec);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;

  const std::string module = module_name(stem, spec);
  const std::span<const uint32_t> words = find_shader(module);
  if (words.empty()) return internal_error("vulkan: shader " + module + " is not embedded in this build");
  const VulkanApi& vk = ctx_.vk();
  const auto t0 = std::chrono::steady_clock::now();

  VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mci.codeSize = words.size() * sizeof(uint32_t);
  mci.pCode = words.data();
  VkShaderModule shader = VK_NULL_HANDLE;
  TS_VK_TRY(vk.vkCreateShaderModule(ctx_.device(), &mci, nullptr, &shader), "vkCreateShaderModule");

  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * (uint32_t)sizeof(uint32_t), sizeof(uint32_t)};
  VkSpecializationInfo si{(uint32_t)entries.size(), entries.data(), spec.size() * sizeof(uint32_t), spec.data()};
  VkComputePipelineCreateInfo pci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pci.stage.module = shader;
  pci.stage.pName = "main";
  pci.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
  pci.layout = layout_;
  VkPipeline pipeline = VK_NULL_HANDLE;
  const VkResult r = vk.vkCreateComputePipelines(ctx_.device(), VK_NULL_HANDLE, 1, &pci, nullptr, &pipeline);
  vk.vkDestroyShaderModule(ctx_.device(), shader, nullptr);
  if (r != VK_SUCCESS) return vk_failed(("vkCreateComputePipelines (" + module + ")").c_str(), r);

  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  creation_ms_ += ms;
  if (log_) {
    std::string s;
    for (uint32_t v : spec) {
      if (!s.empty()) s += ',';
      s += std::to_string(v);
    }
    std::fprintf(stderr, "vulkan: pipeline %s [%s] created in %.0f ms\n", module.c_str(), s.c_str(), ms);
  }
  pipelines_.emplace(std::move(key), pipeline);
  return pipeline;
}

int PipelineCache::created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return (int)pipelines_.size();
}

double PipelineCache::creation_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return creation_ms_;
}

}  // namespace tessera::vulkan
