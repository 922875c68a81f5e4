#include "engine/runtime/model_runner.h"

#include <algorithm>
#include <cstring>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "core/weight_layout.h"
#include "graph/lower.h"
#include "graph/pass_manager.h"

namespace tessera {

Expected<std::unique_ptr<Device>> open_device(const std::string& backend, int index) {
  register_builtin_backends();
  Backend* b = BackendRegistry::global().find(backend);
  if (!b) {
    std::string known;
    for (Backend* k : BackendRegistry::global().all()) known += (known.empty() ? "" : ", ") + k->name();
    return not_found("--backend: '" + backend + "' is not available (have: " + known + ")");
  }
  return b->open(index);
}

Expected<std::unique_ptr<ModelRunner>> ModelRunner::create(std::shared_ptr<const ModelWeights> weights,
                                                           const RunnerOptions& o) {
  const LlamaConfig& c = weights->config;
  TS_TRY(c.validate(weights->source));
  if (o.block_size < 1 || o.max_seqs < 1 || o.max_prefill_tokens < 1 || o.max_context < 0)
    return invalid_argument("runner options: block size, sequences and prefill tokens must be positive");
  int32_t ctx = o.max_context ? o.max_context : std::min(c.context_length, RunnerOptions::kDefaultContextCap);
  if (ctx > c.context_length)
    return invalid_argument("--ctx: " + std::to_string(ctx) + " exceeds the model's context length " + std::to_string(c.context_length));
  const int32_t blocks_per_seq = (ctx + o.block_size - 1) / o.block_size;
  BlockManagerConfig bm{blocks_per_seq * o.max_seqs, o.block_size};
  std::unique_ptr<ModelRunner> r(new ModelRunner(std::move(weights), o, bm));
  r->max_context_ = ctx;
  r->max_blocks_per_seq_ = blocks_per_seq;
  r->options_.max_prefill_tokens = std::min(o.max_prefill_tokens, ctx);

  TS_ASSIGN_OR_RETURN(r->device_, open_device(o.backend, o.device));
  TS_ASSIGN_OR_RETURN(r->graph_, build_llama_graph(*r->weights_, KvLayout{bm.num_blocks, bm.block_size}));
  {
    // Fusions ask the device's kernel table, so a backend without a fused kernel keeps the unfused pattern.
    TS_ASSIGN_OR_RETURN(auto pipeline, graph::parse_pipeline(o.passes, o.backend));
    graph::PassContext ctx{o.backend, &r->device_->kernels(), &r->device_->info(), {}, {}};
    TS_ASSIGN_OR_RETURN(ctx.tile_overrides, graph::parse_tile_overrides(o.tile));
    TS_ASSIGN_OR_RETURN(ctx.weight_layout_override, graph::parse_weight_layout_override(o.weight_layout));
    TS_TRY(graph::run_pipeline(r->graph_, pipeline, ctx));
  }

  // Placement is per model until the placement pass exists: every node the
  // device cannot run is named, and the model runs on the CPU (or, strict,
  // not at all). Never silently.
  for (const auto& n : r->graph_.nodes) {
    OpQuery q{n.op, DType::f32, DType::f32};
    const bool has_weight = n.op == OpKind::matmul || n.op == OpKind::matmul_add || n.op == OpKind::matmul_silu_mul ||
                            n.op == OpKind::matmul_qkv || n.op == OpKind::matmul_add_rms_norm;
    if (has_weight || n.op == OpKind::embedding) q.weight_dtype = r->graph_.value(n.inputs[has_weight ? 1 : 0]).desc.dtype;
    const KernelChoice k = r->device_->kernels().query(q);
    if (!k.supported)
      r->placement_notes_.push_back(o.backend + " cannot run " + n.label + " (" + std::string(name(n.op)) + ", " +
                                    std::string(name(q.weight_dtype)) + "): " + k.reason);
  }
  if (!r->placement_notes_.empty()) {
    const std::string first = r->placement_notes_.front();
    const size_t count = r->placement_notes_.size();
    if (o.strict || o.backend == "cpu")
      return unsupported(std::string(o.strict ? "--strict: " : "") + first +
                         (count > 1 ? " (and " + std::to_string(count - 1) + " more nodes)" : ""));
    r->placement_notes_.push_back("running the whole model on cpu instead of " + o.backend);
    TS_ASSIGN_OR_RETURN(r->device_, open_device("cpu", 0));
  }
  TS_ASSIGN_OR_RETURN(r->stream_, r->device_->create_stream());

  // Weights are imported once and KV pools allocated once; every bucket's plan binds the same buffers.
  for (const auto& v : r->graph_.values) {
    if (v.kind == graph::ValueKind::weight && !r->bound_.count(v.name)) {
      std::span<const std::byte> bytes;
      if (!v.packed_from.empty()) {
        // A packed weight: its parts' rows, in order (row-major, so their bytes one after another).
        std::vector<std::byte> packed;
        for (const std::string& part : v.packed_from) {
          const WeightTensor* t = r->weights_->find(part);
          if (!t || t->desc.dtype != v.desc.dtype || t->desc.shape[1] != v.desc.shape[1])
            return internal_error(v.name + ": part '" + part + "' is missing or does not match the packed layout");
          packed.insert(packed.end(), t->data.begin(), t->data.end());
        }
        if (packed.size() != v.desc.bytes()) return internal_error(v.name + ": packed bytes do not match its shape");
        r->packed_weights_.push_back(std::move(packed));
        bytes = r->packed_weights_.back();
      } else {
        bytes = r->weights_->find(v.name)->data;
      }
      if (v.layout == WeightLayout::rows_x4) {
        // The repack pass chose another block order: made here, once, from the standard bytes.
        TS_ASSIGN_OR_RETURN(std::vector<std::byte> x4, repack_rows_x4(v.desc.dtype, v.desc.shape[0], v.desc.shape[1], bytes));
        if (!v.packed_from.empty()) r->packed_weights_.pop_back();  // the concatenation is not bound; its reorder is
        r->packed_weights_.push_back(std::move(x4));
        bytes = r->packed_weights_.back();
      }
      TS_ASSIGN_OR_RETURN(r->bound_[v.name], r->device_->import_weights(bytes));
    } else if (v.kind == graph::ValueKind::kv_pool) {
      TS_ASSIGN_OR_RETURN(r->bound_[v.name], r->device_->allocate(v.desc.bytes(), MemoryUse::kv_cache));
    }
  }
  return r;
}

Expected<const Plan*> ModelRunner::plan_for(int32_t n_tokens) {
  TS_ASSIGN_OR_RETURN(Executable * exe, executable_for(n_tokens));
  return &exe->plan();
}

Expected<Executable*> ModelRunner::executable_for(int32_t n_tokens) {
  if (n_tokens < 1 || n_tokens > options_.max_prefill_tokens)
    return invalid_argument("step: " + std::to_string(n_tokens) + " tokens; a step holds 1 to " +
                            std::to_string(options_.max_prefill_tokens));
  // Buckets: 1 (decode), then powers of two up to the prefill limit.
  int32_t bucket = 1;
  while (bucket < n_tokens) bucket *= 2;
  bucket = std::min(bucket, options_.max_prefill_tokens);
  auto it = executables_.find(bucket);
  if (it != executables_.end()) return it->second.get();

  ShapeBucket sb{bucket, options_.max_seqs, bucket, max_blocks_per_seq_};
  TS_ASSIGN_OR_RETURN(Plan plan, graph::lower(graph_, sb));
  std::vector<Buffer*> bound(plan.buffers.size(), nullptr);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    auto b = bound_.find(plan.buffers[i].name);
    if (b != bound_.end() && (plan.buffers[i].role == BufferRole::weight || plan.buffers[i].role == BufferRole::kv_pool))
      bound[i] = b->second.get();
  }
  TS_ASSIGN_OR_RETURN(auto exe, device_->compile(plan, bound));
  Executable* raw = exe.get();
  executables_[bucket] = std::move(exe);
  return raw;
}

Status ModelRunner::step(const StepArgs& args, std::span<float> logits_out) {
  TS_ASSIGN_OR_RETURN(Executable * exe, executable_for(args.n_tokens));
  const uint64_t vocab = (uint64_t)config().vocab_size;
  if (logits_out.size() < (uint64_t)args.n_logit_rows * vocab)
    return invalid_argument("step: logits buffer too small");
  TS_TRY(stream_->run(*exe, args));
  const PlanTensor& lt = exe->plan().logits;
  const size_t bytes = (size_t)args.n_logit_rows * vocab * sizeof(float);
  TS_TRY(stream_->download({reinterpret_cast<std::byte*>(logits_out.data()), bytes}, exe->buffer(lt.buffer), lt.offset));
  return stream_->synchronize();
}

uint64_t ModelRunner::weight_bytes_per_token() const {
  uint64_t total = 0;
  for (const auto& n : graph_.nodes) {
    if (n.op == OpKind::matmul || n.op == OpKind::matmul_add || n.op == OpKind::matmul_silu_mul || n.op == OpKind::matmul_qkv ||
        n.op == OpKind::matmul_add_rms_norm)
      total += graph_.value(n.inputs[1]).desc.bytes();
    if (n.op == OpKind::embedding) total += (uint64_t)graph_.value(n.inputs[0]).desc.row_bytes();
  }
  return total;
}

size_t ModelRunner::dispatches_per_step() const { return graph_.nodes.size(); }

}  // namespace tessera
