#include "engine/runtime/model_runner.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "graph/constants.h"
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

  DeviceSlot primary{o.backend, nullptr, nullptr, {}};
  TS_ASSIGN_OR_RETURN(primary.device, open_device(o.backend, o.device));
  r->devices_.push_back(std::move(primary));
  TS_ASSIGN_OR_RETURN(r->graph_, build_llama_graph(*r->weights_, KvLayout{bm.num_blocks, bm.block_size}));
  TS_TRY(r->place_and_bind());
  return r;
}

// Passes, placement and the weights: fusions ask the asked-for device's
// kernel table (a backend without a fused kernel keeps the unfused
// pattern); placement puts what it cannot run on the CPU, with copies; each
// part of the placed graph gets its weights and KV pools on its device.
Status ModelRunner::place_and_bind() {
  const RunnerOptions& o = options_;
  std::unique_ptr<Device> cpu;
  if (o.backend != "cpu") {
    TS_ASSIGN_OR_RETURN(cpu, open_device("cpu", 0));
  }
  Device& target = *devices_[0].device;
  TS_ASSIGN_OR_RETURN(auto pipeline, graph::parse_pipeline(o.passes, o.backend));
  // Placement is not optional (the step must run somewhere): `--passes none` still places.
  if (std::none_of(pipeline.begin(), pipeline.end(), [](const graph::PassInfo* p) { return std::string(p->name) == "place"; }))
    pipeline.push_back(graph::find_pass("place"));
  graph::PassContext ctx{o.backend, &target.kernels(), &target.info(), {}};
  TS_ASSIGN_OR_RETURN(ctx.tile_overrides, graph::parse_tile_overrides(o.tile));
  TS_ASSIGN_OR_RETURN(ctx.placement_overrides, graph::parse_placement_overrides(o.place));
  ctx.fallback_target = "cpu";
  ctx.fallback_kernels = cpu ? &cpu->kernels() : &target.kernels();
  ctx.fallback_device = cpu ? &cpu->info() : &target.info();
  ctx.strict = o.strict;
  ctx.max_positions = max_context_;  // the rows of the folded RoPE tables
  TS_ASSIGN_OR_RETURN(ctx.weight_layout_override, graph::parse_weight_layout_override(o.weight_layout));
  TS_TRY(graph::run_pipeline(graph_, pipeline, ctx));

  // Never silently: what runs off the asked-for backend is reported once,
  // a line per kind of node (op, weight dtype, reason) naming its first node.
  size_t moved = 0, copies = 0;
  std::vector<std::tuple<std::string, size_t, std::string>> kinds;  // (key, how many nodes, first node's line)
  for (const auto& n : graph_.nodes) {
    if (n.op == OpKind::copy) {
      ++copies;
      continue;
    }
    if (n.device == o.backend) continue;
    ++moved;
    // Grouped by the line with the node's label taken out.
    const std::string line = graph::why_placed(graph_, n, ctx);
    std::string key = line;
    if (const size_t at = key.find(n.label); !n.label.empty() && at != std::string::npos) key.erase(at, n.label.size());
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& kd) { return std::get<0>(kd) == key; });
    if (it == kinds.end()) kinds.push_back({key, 1, line});
    else ++std::get<1>(*it);
  }
  for (const auto& [key, count, line] : kinds)
    placement_notes_.push_back(line + (count > 1 ? " (and " + std::to_string(count - 1) + " more nodes like it)" : ""));
  if (moved > 0)
    placement_notes_.push_back(std::to_string(moved) + " of " + std::to_string(graph_.nodes.size() - copies) +
                               " nodes run on cpu instead of " + o.backend + ", with " + std::to_string(copies) +
                               " copies between the devices a step (`tessera ir --target " + o.backend + "` shows where)");

  TS_ASSIGN_OR_RETURN(parts_, graph::partition_by_device(graph_));
  for (const graph::GraphPart& part : parts_) {
    if (std::any_of(devices_.begin(), devices_.end(), [&](const DeviceSlot& d) { return d.backend == part.device; })) continue;
    if (!cpu || part.device != "cpu") return internal_error("placement put nodes on '" + part.device + "'");
    devices_.push_back({"cpu", std::move(cpu), nullptr, {}});
  }
  // Streams only where a part runs (a backend that runs nothing may have none to give).
  for (DeviceSlot& slot : devices_) {
    if (std::none_of(parts_.begin(), parts_.end(), [&](const graph::GraphPart& p) { return p.device == slot.backend; })) continue;
    TS_ASSIGN_OR_RETURN(slot.stream, slot.device->create_stream());
  }

  // Weights are imported once per device that reads them, KV pools allocated
  // once; every bucket's plan binds the same buffers.
  for (const graph::GraphPart& part : parts_) {
    DeviceSlot& slot = *std::find_if(devices_.begin(), devices_.end(), [&](const DeviceSlot& d) { return d.backend == part.device; });
    for (const auto& v : part.graph.values) {
      if (slot.bound.count(v.name)) continue;
      if (v.kind == graph::ValueKind::weight && (!v.packed_from.empty() || v.layout != WeightLayout::rows)) {
        // Made once here, shared by every device that reads it: a packed
        // weight (its parts' rows, in order; row-major, so their bytes one
        // after another), then reordered when the repack pass chose a layout.
        auto [it, fresh] = packed_weights_.try_emplace(v.name);
        if (fresh) {
          std::vector<std::byte> bytes;
          if (v.packed_from.empty()) {
            const WeightTensor* t = weights_->find(v.name);
            if (!t) return internal_error("weight '" + v.name + "' is not in the model");
            bytes.assign(t->data.begin(), t->data.end());
          }
          for (const std::string& part_name : v.packed_from) {
            const WeightTensor* t = weights_->find(part_name);
            if (!t || t->desc.dtype != v.desc.dtype || t->desc.shape[1] != v.desc.shape[1])
              return internal_error(v.name + ": part '" + part_name + "' is missing or does not match the packed layout");
            bytes.insert(bytes.end(), t->data.begin(), t->data.end());
          }
          if (bytes.size() != v.desc.bytes()) return internal_error(v.name + ": packed bytes do not match its shape");
          if (v.layout == WeightLayout::rows_x4) {
            TS_ASSIGN_OR_RETURN(bytes, repack_rows_x4(v.desc.dtype, v.desc.shape[0], v.desc.shape[1], bytes));
          }
          it->second = std::move(bytes);
        }
        TS_ASSIGN_OR_RETURN(slot.bound[v.name], slot.device->import_weights(it->second));
      } else if (v.kind == graph::ValueKind::weight) {
        const WeightTensor* t = weights_->find(v.name);
        if (!t) return internal_error("weight '" + v.name + "' is not in the model");
        TS_ASSIGN_OR_RETURN(slot.bound[v.name], slot.device->import_weights(t->data));
      } else if (v.kind == graph::ValueKind::constant) {
        // A folded constant (a RoPE table): made once from its recipe, owned here like a packed weight.
        auto [it, fresh] = packed_weights_.try_emplace(v.name);
        if (fresh) {
          TS_ASSIGN_OR_RETURN(it->second, graph::materialize_constant(v));
        }
        TS_ASSIGN_OR_RETURN(slot.bound[v.name], slot.device->import_weights(it->second));
      } else if (v.kind == graph::ValueKind::kv_pool) {
        TS_ASSIGN_OR_RETURN(slot.bound[v.name], slot.device->allocate(v.desc.bytes(), MemoryUse::kv_cache));
      }
    }
  }
  return Status::ok();
}

Expected<const Plan*> ModelRunner::plan_for(int32_t n_tokens, int32_t context) {
  TS_ASSIGN_OR_RETURN(BucketProgram * prog, program_for(n_tokens, context ? context : max_context_));
  return &prog->parts.front().exe->plan();
}

std::vector<std::pair<int32_t, int32_t>> ModelRunner::compiled_buckets() const {
  std::vector<std::pair<int32_t, int32_t>> out;
  for (const auto& [key, prog] : programs_) out.push_back(key);
  return out;
}

Expected<ModelRunner::BucketProgram*> ModelRunner::program_for(int32_t n_tokens, int32_t context) {
  if (n_tokens < 1 || n_tokens > options_.max_prefill_tokens)
    return invalid_argument("step: " + std::to_string(n_tokens) + " tokens; a step holds 1 to " +
                            std::to_string(options_.max_prefill_tokens));
  if (context < 1 || context > max_context_)
    return invalid_argument("step: a sequence reaches " + std::to_string(context) + " positions; the runner holds 1 to " +
                            std::to_string(max_context_));
  // Token buckets: 1 (decode), then powers of two up to the prefill limit.
  // Context buckets: powers of two from 256 positions up to the runner's
  // context, so a short conversation's plan sizes its block tables and
  // attention scratch to what it reaches, not to the model's whole context.
  int32_t tokens = 1;
  while (tokens < n_tokens) tokens *= 2;
  tokens = std::min(tokens, options_.max_prefill_tokens);
  int32_t ctx = std::max(1, options_.min_context_bucket);
  while (ctx < context) ctx *= 2;
  ctx = std::min(ctx, max_context_);
  auto it = programs_.find({tokens, ctx});
  if (it != programs_.end()) return &it->second;

  BucketProgram prog;
  const int32_t blocks = std::min(max_blocks_per_seq_, (ctx + options_.block_size - 1) / options_.block_size);
  prog.bucket = ShapeBucket{tokens, options_.max_seqs, tokens, blocks};
  for (size_t p = 0; p < parts_.size(); ++p) {
    const graph::GraphPart& part = parts_[p];
    PartExecutable pe;
    while (devices_[pe.slot].backend != part.device) ++pe.slot;
    DeviceSlot& slot = devices_[pe.slot];
    TS_ASSIGN_OR_RETURN(Plan plan, graph::lower(part.graph, prog.bucket));
    std::vector<Buffer*> bound(plan.buffers.size(), nullptr);
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      const PlanBuffer& pb = plan.buffers[i];
      if (pb.role == BufferRole::transfer) {
        TS_ASSIGN_OR_RETURN(auto b, slot.device->allocate(pb.bytes, MemoryUse::activations));
        bound[i] = b.get();
        pe.transfers.push_back(std::move(b));
      } else if (is_bound(pb.role)) {
        auto b = slot.bound.find(pb.name);
        if (b == slot.bound.end()) return internal_error("'" + pb.name + "' is not bound on " + slot.backend);
        bound[i] = b->second.get();
      }
    }
    for (const graph::GraphPart::Input& in : part.inputs) {
      PartExecutable::Input pin;
      const std::string& vname = part.graph.value(in.value).name;
      while (pin.buffer < plan.buffers.size() && plan.buffers[pin.buffer].name != vname) ++pin.buffer;
      if (pin.buffer == plan.buffers.size()) return internal_error("transfer '" + vname + "' has no plan buffer");
      pin.src_part = (size_t)in.src_part;
      const auto& src_outputs = parts_[pin.src_part].graph.outputs;
      const size_t k = (size_t)(std::find(src_outputs.begin(), src_outputs.end(), in.src_value) - src_outputs.begin());
      pin.src = prog.parts[pin.src_part].exe->plan().outputs.at(k);
      pe.inputs.push_back(pin);
    }
    TS_ASSIGN_OR_RETURN(pe.exe, slot.device->compile(plan, bound));
    if (part.has_logits) prog.logits_part = p;
    prog.parts.push_back(std::move(pe));
  }
  return &(programs_[{tokens, ctx}] = std::move(prog));
}

namespace {

int64_t rows_at(RowCount rows, const TensorDesc& d, const StepArgs& a) {
  switch (rows) {
    case RowCount::fixed: return d.shape[0];
    case RowCount::tokens: return a.n_tokens;
    case RowCount::logit_rows: return a.n_logit_rows;
  }
  return 0;
}

}  // namespace

// A value an earlier part made, into this part's transfer buffer: straight
// into host memory when one side has it (the CPU's), else through staging.
Status ModelRunner::move_input(const BucketProgram& prog, const PartExecutable& part, const PartExecutable::Input& in,
                               const StepArgs& args) {
  const PartExecutable& src = prog.parts[in.src_part];
  Stream& from = *devices_[src.slot].stream;
  Stream& to = *devices_[part.slot].stream;
  Buffer& src_buf = src.exe->buffer(in.src.buffer);
  Buffer& dst_buf = part.exe->buffer(in.buffer);
  const size_t bytes = (size_t)(rows_at(in.src.rows, in.src.desc, args) * (int64_t)in.src.desc.row_bytes());
  if (std::byte* dst = dst_buf.host_data()) return from.download({dst, bytes}, src_buf, in.src.offset);
  if (std::byte* s = src_buf.host_data()) return to.upload(dst_buf, 0, {s + in.src.offset, bytes});
  if (staging_.size() < bytes) staging_.resize(bytes);
  TS_TRY(from.download({staging_.data(), bytes}, src_buf, in.src.offset));
  return to.upload(dst_buf, 0, {staging_.data(), bytes});
}

Status ModelRunner::step(const StepArgs& args, std::span<float> logits_out) {
  int32_t context = 1;
  if (args.seq_lens && args.n_seqs > 0 && args.n_seqs <= options_.max_seqs)
    for (int32_t s = 0; s < args.n_seqs; ++s) context = std::max(context, args.seq_lens[s]);
  context = std::min(context, max_context_);  // a longer one is refused by the step checks, naming it
  TS_ASSIGN_OR_RETURN(BucketProgram * prog, program_for(args.n_tokens, context));
  const uint64_t vocab = (uint64_t)config().vocab_size;
  if (logits_out.size() < (uint64_t)args.n_logit_rows * vocab)
    return invalid_argument("step: logits buffer too small");
  // Block tables arrive max_blocks_per_seq_ apart; a context bucket's plan takes them at its own stride.
  StepArgs a = args;
  const int32_t stride = prog->bucket.max_blocks_per_seq;
  if (args.block_tables && stride != max_blocks_per_seq_ && args.n_seqs > 0 && args.n_seqs <= options_.max_seqs) {
    block_table_scratch_.resize((size_t)args.n_seqs * (size_t)stride);
    for (int32_t s = 0; s < args.n_seqs; ++s)
      std::copy_n(args.block_tables + (size_t)s * (size_t)max_blocks_per_seq_, stride,
                  block_table_scratch_.begin() + (ptrdiff_t)s * stride);
    a.block_tables = block_table_scratch_.data();
  }
  for (const PartExecutable& part : prog->parts) {
    for (const PartExecutable::Input& in : part.inputs) TS_TRY(move_input(*prog, part, in, a));
    TS_TRY(devices_[part.slot].stream->run(*part.exe, a));
  }
  const PartExecutable& last = prog->parts[prog->logits_part];
  const PlanTensor& lt = last.exe->plan().logits;
  const size_t bytes = (size_t)args.n_logit_rows * vocab * sizeof(float);
  TS_TRY(devices_[last.slot].stream->download({reinterpret_cast<std::byte*>(logits_out.data()), bytes},
                                              last.exe->buffer(lt.buffer), lt.offset));
  for (DeviceSlot& d : devices_)
    if (d.stream) TS_TRY(d.stream->synchronize());
  return Status::ok();
}

uint64_t ModelRunner::weight_bytes_per_token() const {
  uint64_t total = 0;
  for (const auto& n : graph_.nodes) {
    if (is_matmul_family(n.op))
      total += graph_.value(n.inputs[1]).desc.bytes();
    if (n.op == OpKind::embedding) total += (uint64_t)graph_.value(n.inputs[0]).desc.row_bytes();
  }
  return total;
}

size_t ModelRunner::nodes_per_step() const {
  return (size_t)std::count_if(graph_.nodes.begin(), graph_.nodes.end(), [](const graph::Node& n) { return n.op != OpKind::copy; });
}

}  // namespace tessera
