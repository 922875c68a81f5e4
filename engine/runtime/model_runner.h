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
#include "graph/partition.h"

namespace tessera {

struct RunnerOptions {
  std::string backend = "cpu";
  int device = 0;
  int32_t block_size = 16;
  int32_t max_context = 0;         // 0: the model's context length, at most kDefaultContextCap
  int32_t max_seqs = 1;            // sequences one step may carry
  int32_t max_prefill_tokens = 256;
  // When the backend cannot run a node: false runs that node on the CPU,
  // with copies between the devices, and reports it (placement_notes); true refuses.
  bool strict = false;
  // Nodes pinned to a device: "paged_attention=cpu,blk.3.*=cpu" (docs/ir.md, placement).
  std::string place;
  // The graph passes to run (graph/pass_manager.h): "default", "none", "default,-fuse_qkv", ...
  std::string passes = "default";
  // Tile sizes that replace the tiling pass's: "matmul.chunk_bytes=32768,..." (docs/ir.md).
  std::string tile;
  // The smallest context a plan is compiled for; plans double from there up
  // to max_context. max_context (or more) makes one context bucket.
  int32_t min_context_bucket = 256;
  std::string weight_layout = "auto";  // --weight-layout: auto (the target's preference), rows or rows_x4
  static constexpr int32_t kDefaultContextCap = 4096;
};

class ModelRunner {
 public:
  static Expected<std::unique_ptr<ModelRunner>> create(std::shared_ptr<const ModelWeights> weights,
                                                       const RunnerOptions& options);

  // Runs one step; logits_out receives n_logit_rows * vocab floats.
  // args.block_tables rows are max_blocks_per_seq() apart.
  Status step(const StepArgs& args, std::span<float> logits_out);

  const ModelWeights& weights() const { return *weights_; }
  const LlamaConfig& config() const { return weights_->config; }
  const graph::Graph& graph() const { return graph_; }
  // The asked-for backend's device (the CPU may run some nodes too: placement_notes).
  const DeviceInfo& device_info() const { return devices_[0].device->info(); }
  Device& device() { return *devices_[0].device; }
  BlockManager& blocks() { return blocks_; }
  int32_t max_context() const { return max_context_; }
  int32_t max_tokens_per_step() const { return options_.max_prefill_tokens; }
  int32_t max_blocks_per_seq() const { return max_blocks_per_seq_; }
  // Bytes of weights a decode step reads (every matmul weight once, plus one embedding row).
  uint64_t weight_bytes_per_token() const;
  // The plan a step of n_tokens reaching `context` positions runs (compiled
  // on demand; 0: the full context): its first part's, when placement split it.
  Expected<const Plan*> plan_for(int32_t n_tokens, int32_t context = 0);
  // Graph nodes a step runs, copies between devices not counted. On the CPU
  // each is one kernel call; another backend may issue several dispatches for
  // one node (Vulkan decode attention: split, then merge), so this is not a
  // count of kernel launches.
  size_t nodes_per_step() const;
  // One line per node that runs on the CPU instead of the asked-for backend,
  // then a summary line; empty when the whole model runs where asked.
  const std::vector<std::string>& placement_notes() const { return placement_notes_; }
  // The shape buckets compiled so far (tokens, context).
  std::vector<std::pair<int32_t, int32_t>> compiled_buckets() const;

 private:
  // One device the step runs on: [0] the asked-for backend, then the CPU when placement put nodes there.
  struct DeviceSlot {
    std::string backend;
    std::unique_ptr<Device> device;
    std::unique_ptr<Stream> stream;
    std::map<std::string, std::unique_ptr<Buffer>> bound;  // weights and KV pools by name
  };
  // One part of the placed graph (graph/partition.h), compiled for one bucket.
  struct PartExecutable {
    size_t slot = 0;
    std::unique_ptr<Executable> exe;
    struct Input {
      uint32_t buffer = 0;  // this plan's transfer buffer
      size_t src_part = 0;
      PlanTensor src;       // where an earlier part left the bytes
    };
    std::vector<Input> inputs;
    std::vector<std::unique_ptr<Buffer>> transfers;  // bound to the transfer buffers
  };
  struct BucketProgram {
    ShapeBucket bucket;
    std::vector<PartExecutable> parts;
    size_t logits_part = 0;
  };

  ModelRunner(std::shared_ptr<const ModelWeights> w, const RunnerOptions& o, BlockManagerConfig bm)
      : weights_(std::move(w)), options_(o), blocks_(bm) {}
  Status place_and_bind();
  Expected<BucketProgram*> program_for(int32_t n_tokens, int32_t context);
  Status move_input(const BucketProgram& prog, const PartExecutable& part, const PartExecutable::Input& in,
                    const StepArgs& args);

  std::shared_ptr<const ModelWeights> weights_;
  RunnerOptions options_;
  std::vector<DeviceSlot> devices_;
  graph::Graph graph_;
  std::vector<graph::GraphPart> parts_;
  BlockManager blocks_;
  int32_t max_context_ = 0;
  int32_t max_blocks_per_seq_ = 0;
  std::map<std::pair<int32_t, int32_t>, BucketProgram> programs_;  // by (tokens, context) bucket
  std::vector<std::string> placement_notes_;
  // Weights the passes packed (pack=concat_rows in the IR) and constants they
  // folded (recipe=rope_table), made once here and imported by each device
  // that reads them; a device may keep pointing
  // at them (the CPU imports in place).
  std::map<std::string, std::vector<std::byte>> packed_weights_;
  std::vector<std::byte> staging_;        // transfers between two devices without host memory
  std::vector<int32_t> block_table_scratch_;  // block tables at a context bucket's row stride
};

// Opens `backend` device `index` from the registry (built-ins registered first).
Expected<std::unique_ptr<Device>> open_device(const std::string& backend, int index);

}  // namespace tessera
