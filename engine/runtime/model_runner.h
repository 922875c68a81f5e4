#pragma once
// One model on its devices (the asked-for one, then the CPU or devices --place
// names where placement puts nodes: one slot each): weights imported once, and one compiled Executable
// per shape bucket (tokens, context), all compiled when a KV cache is attached
// (warm-up), so a bucket that cannot compile fails at open, not mid-generation.
// The KV cache is not the runner's: it makes one (create_kv_cache) for whoever
// schedules sequences, and reads it (attach) to bind its pools.
//
// A step is submit() then collect(): submit checks the step, runs the block
// copies it asks for, queues every part's work on its device's stream with
// the step's arrays copied into the executable's step inputs, and queues the
// download of what the step returns into pinned host memory; it returns a
// ticket before the device is done (on a GPU). Up to kMaxInFlight steps may be
// in flight, so the host prepares step N+1 while step N runs; collect(ticket)
// waits for that step and hands back its logit rows or its greedy tokens
// (sampled on the device, when the runner was built with sample_on_device).
#include <array>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/hal/backend.h"
#include "core/huge_pages.h"
#include "core/status.h"
#include "engine/dist/parallel.h"
#include "engine/kv/kv_cache.h"
#include "engine/models/model_weights.h"
#include "engine/runtime/model_graph.h"
#include "graph/ir.h"
#include "graph/partition.h"
#include "graph/pass_manager.h"

namespace tessera {

struct RunnerOptions {
  std::string backend = "cpu";
  int device = 0;
  int32_t block_size = 16;
  int32_t max_context = 0;         // 0: the model's context length, at most kDefaultContextCap
  int32_t max_seqs = 1;            // sequences one step may carry
  int32_t max_prefill_tokens = 256;
  // Bytes of K/V pools (every layer) to allocate; 0: enough for max_seqs
  // sequences of the whole context. Less than one such sequence is refused.
  uint64_t kv_cache_bytes = 0;
  // With kv_cache_bytes 0: when > 0, the budget is this fraction of the
  // device's free memory after the weights it must hold (kv_budget_for),
  // capped at 2 x max_seqs whole-context sequences (a full batch, and as
  // much again for the prefix cache to keep); -1: the device kind's
  // default fraction (kDefaultKvFraction*); 0: max_seqs of them.
  double kv_memory_fraction = 0;
  // A discrete GPU's memory is the cache's to take; a CPU's (or an
  // integrated GPU's) is the host's, shared with everything else on it.
  static constexpr double kDefaultKvFractionGpu = 0.9;
  static constexpr double kDefaultKvFractionHost = 0.5;
  // Add the greedy token of each logit row to the graph (argmax on the
  // device), so a step can return R ids rather than R x vocab floats.
  bool sample_on_device = false;
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
  // --kv-type: the KV pools' element type, f32, f16, bf16, q8_0 or fp8_e4m3; "auto": f32 for
  // f32 models, f16 for the rest (engine/kv/kv_type.h).
  std::string kv_type = "auto";
  // --batch-invariant: kernels whose rows never depend on the step's other
  // rows, bucket or decode/prefill path, where the defaults' do (docs/backends.md, "Batch invariance").
  bool batch_invariant = false;
  // --tensor-parallel, --pipeline-parallel: this runner is one rank's part of the model (engine/dist/parallel.h).
  Parallelism parallel;
  static constexpr int32_t kDefaultContextCap = 4096;
};

// What a step returns.
enum class StepOutputs : uint8_t {
  logits = 1,  // n_logit_rows x vocab floats
  tokens = 2,  // n_logit_rows greedy ids, chosen on the device (RunnerOptions::sample_on_device)
  both = 3,
};

struct StepRequest {
  StepArgs args;  // block_tables rows max_blocks_per_seq() apart
  // KV blocks to copy (in every layer's pools) before the step writes: the
  // BlockManager's copy-on-write instructions from reserve().
  std::span<const BlockCopy> block_copies;
  StepOutputs outputs = StepOutputs::logits;
};

using StepTicket = uint64_t;

// A collected step's results: views into the runner's pinned memory, valid
// until kMaxInFlight more steps have been submitted.
struct StepResult {
  std::span<const float> logits;    // n_logit_rows x vocab, when asked for
  std::span<const int32_t> tokens;  // n_logit_rows, when asked for
};

class ModelRunner {
 public:
  static constexpr int kMaxInFlight = 2;

  // Opens the devices, builds and places the graph for the KV cache the
  // options size, and imports the weights. Nothing is compiled until attach().
  static Expected<std::unique_ptr<ModelRunner>> create(std::shared_ptr<const ModelWeights> weights,
                                                       const RunnerOptions& options);
  ~ModelRunner();

  // The K/V pools, each on the device its nodes were placed on, sized as the
  // graph was built; the caller owns the cache and must keep the runner alive
  // while it lives (its pools are memory of the runner's devices).
  Expected<std::unique_ptr<KvCache>> create_kv_cache();
  // Binds the cache's pools and compiles every shape bucket. Once, before any step.
  Status attach(KvCache& kv);

  Expected<StepTicket> submit(const StepRequest& request);
  Expected<StepResult> collect(StepTicket ticket);
  // Waits for all work queued on every device (before the KV cache's pools go).
  Status synchronize();
  // submit + collect, copying the logit rows into logits_out (n_logit_rows * vocab).
  Status step(const StepArgs& args, std::span<float> logits_out, std::span<const BlockCopy> block_copies = {});

  const ModelWeights& weights() const { return *weights_; }
  const TransformerConfig& config() const { return weights_->config; }
  const graph::Graph& graph() const { return graph_; }
  // The asked-for device (the CPU and devices --place names may run some nodes too: placement_notes).
  const DeviceInfo& device_info() const { return devices_[0].device->info(); }
  Device& device() { return *devices_[0].device; }
  // The stream of device slot `slot` (a KvCache::Pool's `device`), for moving
  // KV blocks in and out of the pools between steps (disaggregation).
  Stream& stream(size_t slot) { return *devices_[slot].stream; }
  const KvCacheSpec& kv_spec() const { return kv_spec_; }
  KvCache* kv_cache() const { return kv_; }
  bool samples_on_device() const { return options_.sample_on_device; }
  int32_t max_context() const { return max_context_; }
  // The token count a step of n_tokens runs at (its bucket: the next power of two, capped).
  int32_t token_bucket(int32_t n_tokens) const { return bucket_for(n_tokens, 1).first; }
  int32_t max_tokens_per_step() const { return options_.max_prefill_tokens; }
  int32_t max_seqs() const { return options_.max_seqs; }
  int32_t max_blocks_per_seq() const { return max_blocks_per_seq_; }
  // Bytes of weights a decode step reads (every matmul weight once, plus one embedding row).
  uint64_t weight_bytes_per_token() const;
  // The plan a step of n_tokens reaching `context` positions runs (0: the
  // full context): its first part's, when placement split it.
  Expected<const Plan*> plan_for(int32_t n_tokens, int32_t context = 0);
  // Graph nodes a step runs, copies between devices not counted. On the CPU
  // each is one kernel call; another backend may issue several dispatches for
  // one node (Vulkan decode attention: split, then merge), so this is not a
  // count of kernel launches.
  size_t nodes_per_step() const;
  // One line per kind of node that runs off the asked-for device (on the CPU
  // fallback, or where --place put it), then a summary line counting the
  // nodes on each other device; empty when the whole model runs where asked.
  const std::vector<std::string>& placement_notes() const { return placement_notes_; }
  // The shape buckets compiled (tokens, context).
  std::vector<std::pair<int32_t, int32_t>> compiled_buckets() const;
  // Bytes of activation arenas held: one per part of the placed graph, shared by every bucket.
  uint64_t arena_bytes() const;
  // A pipeline's first stage: the micro-batches its steps were cut into so far.
  int64_t micro_batches() const { return micro_batches_; }
  // --pipeline-parallel's stages (1 when the model is not split by layers).
  int32_t pipeline_stages() const { return pipelined_ ? options_.parallel.pipeline : 1; }

 private:
  // One device the step runs on: [0] the asked-for device, then each other
  // device placement put nodes on (the CPU fallback, devices --place named).
  struct DeviceSlot {
    DeviceId id;
    std::unique_ptr<Device> device;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> moved;  // recorded after a value leaves this device for another
    std::array<std::unique_ptr<Event>, kMaxInFlight> done;  // per in-flight slot: the step's work here
    std::map<std::string, std::unique_ptr<Buffer>> bound;  // weights by name
  };
  // One part of the placed graph (graph/partition.h), compiled for one bucket.
  struct PartExecutable {
    size_t part = 0;
    size_t slot = 0;
    std::unique_ptr<Executable> exe;
    struct Input {
      uint32_t buffer = 0;  // this plan's transfer buffer
      size_t src_part = 0;
      PlanTensor src;       // where an earlier part left the bytes
    };
    std::vector<Input> inputs;
  };
  struct BucketProgram {
    ShapeBucket bucket;
    std::vector<PartExecutable> parts;
  };
  // Buffers every bucket of one part shares: its arena and its transfer inputs.
  struct PartBuffers {
    std::unique_ptr<Buffer> arena;
    std::map<std::string, std::unique_ptr<Buffer>> transfers;
  };
  // Pinned host memory a step's results land in, per in-flight slot.
  struct InFlight {
    StepTicket ticket = 0;  // 0: free
    bool collected = true;
    int32_t rows = 0;
    StepOutputs outputs = StepOutputs::logits;
    std::unique_ptr<Buffer> logits, tokens;  // host_staging of the device that makes each
    std::vector<uint64_t> posted;  // a pipeline's leader: the receives of each micro-batch's logits
  };
  // A pipeline leader's micro-batch: a run of the step's tokens, its arrays rebased.
  struct MicroBatch {
    StepArrays arrays;
    StepArgs args;  // over `arrays`
  };
  struct Queued {
    BucketProgram* prog = nullptr;
    StepArgs args;  // block tables at the bucket's stride
  };

  ModelRunner(std::shared_ptr<const ModelWeights> w, const RunnerOptions& o) : weights_(std::move(w)), options_(o) {}
  Status place_and_bind();
  // The weights the tensor_parallel pass sharded, cut into memory of their own
  // and seen under their names from then on (weights_ becomes a view with them).
  Status cut_shards();
  Status use_communicators();
  Status check_step_to_send(const StepArgs& args) const;
  Expected<Queued> queue_step(const StepArgs& args, std::span<const BlockCopy> block_copies);
  Status submit_micro_batches(const StepRequest& request, InFlight& f);
  int split_micro_batches(const StepArgs& a, int pieces);
  // The fewest tokens a micro-batch is cut to (micro_batches.cpp).
  int32_t min_micro_batch_tokens() const;
  Status make_weights();
  Status make_weight(const graph::Value& v, std::span<std::byte> out) const;
  Status compile_buckets();
  std::vector<std::pair<int32_t, int32_t>> bucket_keys() const;
  std::pair<int32_t, int32_t> bucket_for(int32_t n_tokens, int32_t context) const;
  Expected<BucketProgram*> program_for(int32_t n_tokens, int32_t context);
  DeviceSlot& slot_of(const DeviceId& id);
  Status move_input(const BucketProgram& prog, const PartExecutable& part, const PartExecutable::Input& in,
                    const StepArgs& args);
  Status run_block_copies(std::span<const BlockCopy> copies);
  Status queue_results(const BucketProgram& prog, InFlight& f, int slot_index, const StepArgs& args);

  std::shared_ptr<const ModelWeights> weights_;
  RunnerOptions options_;
  std::vector<DeviceSlot> devices_;
  graph::Graph graph_;
  std::vector<graph::GraphPart> parts_;
  KvCacheSpec kv_spec_;
  KvCache* kv_ = nullptr;
  int32_t max_context_ = 0;
  int32_t max_blocks_per_seq_ = 0;
  std::map<std::pair<int32_t, int32_t>, BucketProgram> programs_;  // by (tokens, context) bucket
  std::vector<PartBuffers> part_buffers_;                        // by part
  std::array<InFlight, kMaxInFlight> in_flight_;
  StepTicket next_ticket_ = 1;
  std::vector<std::string> placement_notes_;
  // Weights the passes packed (pack=concat_rows in the IR) or reordered
  // ({layout=...}) and constants they folded (recipe=rope_table), made once
  // here (make_weights) in one huge-page allocation and imported by each
  // device that reads them; a device may keep pointing at them (the CPU
  // imports in place).
  HostBytes made_bytes_;
  std::map<std::string, std::span<const std::byte>> made_;
  std::vector<std::byte> staging_;            // transfers between two devices without host memory
  std::vector<int32_t> block_table_scratch_;  // block tables at a context bucket's row stride
  // Tensor parallelism: the ranks' group; the leader (rank 0) sends every
  // step to the others before running it (engine/dist/parallel.h).
  ResolvedGroup tp_;
  bool leader_ = false;
  bool pipelined_ = false;            // --pipeline-parallel: this runner is one stage
  std::vector<MicroBatch> micro_;     // the leader's, reused step after step
  int64_t micro_batches_ = 0;
  int32_t min_micro_batch_tokens_ = 0;  // 0 until the first step asks
  std::vector<std::byte> step_wire_;
};

// The KV budget RunnerOptions::kv_memory_fraction gives on `device` for
// weights of `weight_bytes`: the fraction of its free memory after the
// weights (a device in host memory that maps the file in place holds none
// of them), capped at `cap_bytes`. Zero when the free memory is unknown.
struct KvBudget {
  uint64_t bytes = 0;
  uint64_t free_bytes = 0;    // the device's free memory before the weights
  uint64_t weight_bytes = 0;  // counted against it
};
Expected<KvBudget> kv_budget_for(Device& device, uint64_t weight_bytes, double fraction, uint64_t cap_bytes);

// Opens `backend` device `index` from the registry (built-ins registered first).
Expected<std::unique_ptr<Device>> open_device(const std::string& backend, int index);

struct OpenedDevice {
  DeviceId id;
  std::unique_ptr<Device> device;
};
// Lists in ctx the devices placement may use: `target` (as ctx.target,
// kernels, device), the CPU as the fallback (cpu:0; the target itself when
// it is cpu:0), and each other device ctx.placement_overrides names
// (other_devices). Opens the ones that are not the target and returns them:
// the caller keeps them alive while ctx is used. A device that does not open
// is an error naming --place.
Expected<std::vector<OpenedDevice>> open_placement_devices(const DeviceId& target_id, Device& target, graph::PassContext& ctx);

}  // namespace tessera

namespace tessera {

// A runner with its KV cache made and attached: what one process serving its
// own sequences needs. The cache is declared second, so it goes first.
struct RunnerWithCache {
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<KvCache> kv;
  RunnerWithCache() = default;
  RunnerWithCache(RunnerWithCache&&) = default;
  RunnerWithCache& operator=(RunnerWithCache&&) = default;
  // Queued work may still read the pools: it finishes before they go.
  ~RunnerWithCache() {
    if (runner) (void)runner->synchronize();
  }
};
Expected<RunnerWithCache> open_runner(std::shared_ptr<const ModelWeights> weights, const RunnerOptions& options);

}  // namespace tessera
