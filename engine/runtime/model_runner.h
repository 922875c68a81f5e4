#pragma once
// One model on one device: weights imported once, per-layer KV pools
// allocated once, and a compiled Executable per shape bucket (compiled on
// first use, then replayed). step() runs one batch of tokens and returns the
// requested rows of logits.
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/hal/backend.h"
#include "core/status.h"
#include "engine/kv/block_manager.h"
#include "engine/models/model_weights.h"
#include "engine/runtime/llama_graph.h"
#include "graph/ir.h"

namespace tessera {

struct RunnerOptions {
  std::string backend = "cpu";
  int device = 0;
  int32_t block_size = 16;
  int32_t max_context = 0;         // 0: the model's context length, at most kDefaultContextCap
  int32_t max_seqs = 1;            // sequences one step may carry
  int32_t max_prefill_tokens = 256;
  // When the backend cannot run a node: false runs the model on the CPU and
  // reports each such node (placement_notes); true refuses.
  bool strict = false;
  // The graph passes to run (graph/pass_manager.h): "default", "none", "default,-fuse_qkv", ...
  std::string passes = "default";
  // Tile sizes that replace the tiling pass's: "matmul.chunk_bytes=32768,..." (docs/ir.md).
  std::string tile;
  std::string weight_layout = "auto";  // --weight-layout: auto (the target's preference), rows or rows_x4
  static constexpr int32_t kDefaultContextCap = 4096;
};

class ModelRunner {
 public:
  static Expected<std::unique_ptr<ModelRunner>> create(std::shared_ptr<const ModelWeights> weights,
                                                       const RunnerOptions& options);

  // Runs one step; logits_out receives n_logit_rows * vocab floats.
  Status step(const StepArgs& args, std::span<float> logits_out);

  const ModelWeights& weights() const { return *weights_; }
  const LlamaConfig& config() const { return weights_->config; }
  const graph::Graph& graph() const { return graph_; }
  const DeviceInfo& device_info() const { return device_->info(); }
  Device& device() { return *device_; }
  BlockManager& blocks() { return blocks_; }
  int32_t max_context() const { return max_context_; }
  int32_t max_tokens_per_step() const { return options_.max_prefill_tokens; }
  int32_t max_blocks_per_seq() const { return max_blocks_per_seq_; }
  // Bytes of weights a decode step reads (every matmul weight once, plus one embedding row).
  uint64_t weight_bytes_per_token() const;
  // The plan of the bucket that a step of n_tokens runs (compiled on demand).
  Expected<const Plan*> plan_for(int32_t n_tokens);
  size_t dispatches_per_step() const;
  // One line per node the asked-for backend could not run, when the model
  // fell back to the CPU; empty when it runs where asked.
  const std::vector<std::string>& placement_notes() const { return placement_notes_; }

 private:
  ModelRunner(std::shared_ptr<const ModelWeights> w, const RunnerOptions& o, BlockManagerConfig bm)
      : weights_(std::move(w)), options_(o), blocks_(bm) {}
  Expected<Executable*> executable_for(int32_t n_tokens);

  std::shared_ptr<const ModelWeights> weights_;
  RunnerOptions options_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Stream> stream_;
  graph::Graph graph_;
  BlockManager blocks_;
  int32_t max_context_ = 0;
  int32_t max_blocks_per_seq_ = 0;
  std::map<std::string, std::unique_ptr<Buffer>> bound_;  // weights and KV pools by name
  std::map<int32_t, std::unique_ptr<Executable>> executables_;  // by bucket max_tokens
  std::vector<std::string> placement_notes_;
  // Weights the passes packed (pack=concat_rows) or reordered (layout=rows_x4), made once here;
  // the device may keep pointing at them (the CPU imports in place).
  std::vector<std::vector<std::byte>> packed_weights_;
};

// Opens `backend` device `index` from the registry (built-ins registered first).
Expected<std::unique_ptr<Device>> open_device(const std::string& backend, int index);

}  // namespace tessera
