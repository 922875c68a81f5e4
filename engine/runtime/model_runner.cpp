#include "engine/runtime/model_runner.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <span>
#include <tuple>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "core/hal/step_check.h"
#include "graph/constants.h"
#include "core/quant.h"
#include "core/weight_layout.h"
#include "engine/kv/kv_type.h"
#include "graph/lower.h"
#include "graph/pass_manager.h"

namespace tessera {

Expected<std::unique_ptr<Device>> open_device(const std::string& backend, int index) {
  register_builtin_backends();
  Backend* b = BackendRegistry::global().find(backend);
  if (!b) {
    std::string known;
    for (Backend* k : BackendRegistry::global().all()) known += (known.empty() ? "" : ", ") + k->name();
    return not_found("backend '" + backend + "' is not available (have: " + known + ")");
  }
  return b->open(index);
}

Expected<std::vector<OpenedDevice>> open_placement_devices(const DeviceId& target_id, Device& target, graph::PassContext& ctx) {
  std::vector<OpenedDevice> opened;
  ctx.target = target_id;
  ctx.kernels = &target.kernels();
  ctx.device = &target.info();
  ctx.fallback_target = DeviceId{"cpu", 0};
  ctx.fallback_kernels = &target.kernels();
  ctx.fallback_device = &target.info();
  if (target_id != ctx.fallback_target) {
    TS_ASSIGN_OR_RETURN(auto cpu, open_device("cpu", 0));
    ctx.fallback_kernels = &cpu->kernels();
    ctx.fallback_device = &cpu->info();
    opened.push_back({ctx.fallback_target, std::move(cpu)});
  }
  ctx.other_devices.clear();
  for (const graph::PlacementOverride& o : ctx.placement_overrides) {
    if (ctx.find_device(o.device)) continue;  // the target, the fallback, or opened for an earlier item
    auto d = open_device(o.device.backend, o.device.index);
    if (!d) return d.status().with_context("--place: device '" + o.device.to_string() + "' for '" + o.pattern + "'");
    ctx.other_devices.push_back({o.device, &(*d)->kernels(), &(*d)->info()});
    opened.push_back({o.device, std::move(*d)});
  }
  return opened;
}

Expected<std::unique_ptr<ModelRunner>> ModelRunner::create(std::shared_ptr<const ModelWeights> weights,
                                                           const RunnerOptions& o) {
  const TransformerConfig& c = weights->config;
  TS_TRY(c.validate(weights->source));
  if (o.block_size < 1 || o.max_seqs < 1 || o.max_prefill_tokens < 1 || o.max_context < 0)
    return invalid_argument("runner options: block size, sequences and prefill tokens must be positive");
  int32_t ctx = o.max_context ? o.max_context : std::min(c.context_length, RunnerOptions::kDefaultContextCap);
  if (ctx > c.context_length)
    return invalid_argument("--ctx: " + std::to_string(ctx) + " exceeds the model's context length " + std::to_string(c.context_length));
  const int32_t blocks_per_seq = (ctx + o.block_size - 1) / o.block_size;
  std::unique_ptr<ModelRunner> r(new ModelRunner(std::move(weights), o));
  if (o.parallel.pipeline > c.n_layers)
    return invalid_argument(o.parallel.flag() + ": the model has " + std::to_string(c.n_layers) + " layers, fewer than the stages");
  if (o.parallel.ranks() > 1) {
    TS_ASSIGN_OR_RETURN(r->tp_, resolve_group(o.parallel));
    r->pipelined_ = o.parallel.pipeline > 1;
    r->leader_ = r->tp_.group->rank() == 0;
    // The followers open a runner like this one: from here on every rank takes the same steps.
    if (r->leader_) TS_TRY(send_control(*r->tp_.group, ControlKind::open, encode_open(o)));
  }
  r->max_context_ = ctx;
  r->max_blocks_per_seq_ = blocks_per_seq;
  r->options_.max_prefill_tokens = std::min(o.max_prefill_tokens, ctx);

  DeviceSlot primary;
  primary.id = DeviceId{o.backend, o.device};
  auto target = open_device(o.backend, o.device);
  if (!target) return target.status().with_context("--backend");
  primary.device = std::move(*target);
  r->devices_.push_back(std::move(primary));
  TS_ASSIGN_OR_RETURN(const DType kv_dtype, resolve_kv_type(o.kv_type, *r->weights_, &r->devices_[0].device->kernels()));
  // One block of every layer's K and V pools, in the pools' element type.
  // A tensor-parallel rank holds its share of the KV heads; the budget is each rank's.
  // A pipeline stage holds its layers' pools only.
  const int64_t kv_width = c.kv_dim() / std::max(1, o.parallel.tensor);
  const int64_t kv_layers = r->pipelined_ ? shard_range(c.n_layers, o.parallel.pipeline, r->tp_.group->rank()).size() : c.n_layers;
  const uint64_t bytes_per_block = 2ull * (uint64_t)kv_layers * (uint64_t)o.block_size * bytes_for(kv_dtype, kv_width);
  uint64_t budget = o.kv_cache_bytes;
  if (budget == 0 && o.kv_memory_fraction != 0) {
    const uint64_t cap = 2ull * (uint64_t)o.max_seqs * (uint64_t)blocks_per_seq * bytes_per_block;
    TS_ASSIGN_OR_RETURN(const KvBudget b, kv_budget_for(*r->devices_[0].device, r->weights_->total_bytes(), o.kv_memory_fraction, cap));
    budget = b.bytes;
    if (budget == 0 && b.free_bytes > 0)
      return resource_exhausted("kv cache: " + r->devices_[0].id.to_string() + " has " + std::to_string(b.free_bytes >> 20) +
                                " MiB free and the weights take " + std::to_string(b.weight_bytes >> 20) +
                                " MiB: nothing is left for the KV cache (give --kv-cache-memory)");
  }
  TS_ASSIGN_OR_RETURN(r->kv_spec_, size_kv_cache({budget, bytes_per_block, o.block_size, blocks_per_seq, o.max_seqs, 0, kv_dtype}));
  // The leader's block tables index every rank's pools: all ranks take the smallest count any can hold.
  if (r->tp_.group) {
    TS_ASSIGN_OR_RETURN(const int64_t blocks, r->tp_.group->min(r->kv_spec_.num_blocks));
    r->kv_spec_.num_blocks = (int32_t)blocks;
  }
  TS_ASSIGN_OR_RETURN(r->graph_, build_model_graph(*r->weights_,
                                                   KvLayout{r->kv_spec_.num_blocks, r->kv_spec_.block_size, kv_dtype},
                                                   ModelGraphOptions{o.sample_on_device}));
  TS_TRY(r->place_and_bind());
  return r;
}

ModelRunner::~ModelRunner() {
  // Work still queued reads the plans' buffers: let it finish before they go.
  for (DeviceSlot& d : devices_)
    if (d.stream) (void)d.stream->synchronize();
  if (leader_) (void)send_control(*tp_.group, ControlKind::close);
}

Status ModelRunner::synchronize() {
  for (DeviceSlot& d : devices_)
    if (d.stream) TS_TRY(d.stream->synchronize());
  return Status::ok();
}

ModelRunner::DeviceSlot& ModelRunner::slot_of(const DeviceId& id) {
  return *std::find_if(devices_.begin(), devices_.end(), [&](const DeviceSlot& d) { return d.id == id; });
}

// Passes, placement and the weights: fusions ask the asked-for device's
// kernel table (a backend without a fused kernel keeps the unfused
// pattern); placement puts what it cannot run on the CPU and what --place
// names where it says (another device of the same backend included), with
// copies; each part of the placed graph gets its weights and KV pools on its device.
Status ModelRunner::place_and_bind() {
  const RunnerOptions& o = options_;
  const DeviceId target_id = devices_[0].id;
  Device& target = *devices_[0].device;
  TS_ASSIGN_OR_RETURN(auto pipeline, graph::parse_pipeline(o.passes, o.backend));
  // Placement is not optional (the step must run somewhere): `--passes none` still places.
  auto has_pass = [&](const char* name) {
    return std::any_of(pipeline.begin(), pipeline.end(), [&](const graph::PassInfo* p) { return std::string(p->name) == name; });
  };
  if (!has_pass("place")) pipeline.push_back(graph::find_pass("place"));
  // Nor is batch invariance: the tiling pass is where nodes get it.
  if (o.batch_invariant && !has_pass("tile")) pipeline.push_back(graph::find_pass("tile"));
  graph::PassContext ctx;
  TS_ASSIGN_OR_RETURN(ctx.tile_overrides, graph::parse_tile_overrides(o.tile));
  TS_ASSIGN_OR_RETURN(ctx.placement_overrides, graph::parse_placement_overrides(o.place));
  // The CPU fallback and the devices --place names, opened now; each keeps
  // a slot below only if placement put nodes on it.
  TS_ASSIGN_OR_RETURN(std::vector<OpenedDevice> others, open_placement_devices(target_id, target, ctx));
  ctx.strict = o.strict;
  ctx.max_positions = max_context_;  // the rows of the folded RoPE tables
  ctx.batch_invariant = o.batch_invariant;
  TS_ASSIGN_OR_RETURN(ctx.weight_layout_override, graph::parse_weight_layout_override(o.weight_layout));
  // A split comes first, on the builder's graph, whatever the pass list says;
  // the shards are cut before the other passes pack and reorder them as they
  // would a smaller model's.
  if (tp_.group) {
    ctx.tp_rank = ctx.pp_rank = tp_.group->rank();
    ctx.tp_size = o.parallel.tensor;
    ctx.pp_size = o.parallel.pipeline;
    std::erase_if(pipeline, [](const graph::PassInfo* p) {
      return std::string(p->name) == "tensor_parallel" || std::string(p->name) == "pipeline_parallel";
    });
    TS_TRY(graph::run_pipeline(graph_, {graph::find_pass("tensor_parallel"), graph::find_pass("pipeline_parallel")}, ctx));
    TS_TRY(cut_shards());
  }
  TS_TRY(graph::run_pipeline(graph_, pipeline, ctx));

  // Never silently: what runs off the asked-for device is reported once,
  // a line per kind of node (op, weight dtype, reason) naming its first
  // node, then how many nodes each other device runs.
  size_t copies = 0;
  std::vector<std::tuple<std::string, size_t, std::string>> kinds;  // (key, how many nodes, first node's line)
  std::vector<std::pair<DeviceId, size_t>> elsewhere;                // nodes per device other than the target, first use first
  for (const auto& n : graph_.nodes) {
    if (n.op == OpKind::copy) {
      ++copies;
      continue;
    }
    if (n.device == target_id) continue;
    auto at = std::find_if(elsewhere.begin(), elsewhere.end(), [&](const auto& e) { return e.first == n.device; });
    if (at == elsewhere.end()) elsewhere.push_back({n.device, 1});
    else ++at->second;
    // Grouped by the line with the node's label and quoted names (its layer's
    // KV pool) taken out, so that one line stands for every layer.
    const std::string line = graph::why_placed(graph_, n, ctx);
    std::string key = line;
    if (const size_t pos = key.find(n.label); !n.label.empty() && pos != std::string::npos) key.erase(pos, n.label.size());
    for (size_t open; (open = key.find('\'')) != std::string::npos;) {
      const size_t close = key.find('\'', open + 1);
      if (close == std::string::npos) break;
      key.erase(open, close - open + 1);
    }
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& kd) { return std::get<0>(kd) == key; });
    if (it == kinds.end()) kinds.push_back({key, 1, line});
    else ++std::get<1>(*it);
  }
  for (const auto& [key, count, line] : kinds)
    placement_notes_.push_back(line + (count > 1 ? " (and " + std::to_string(count - 1) + " more nodes like it)" : ""));
  if (!elsewhere.empty()) {
    // "10 of 84 nodes run on cpu:0 instead of vulkan:0", or "30 of 84 nodes run on vulkan:1, 10 on cpu:0 instead of vulkan:0".
    std::string line;
    for (const auto& [id, count] : elsewhere)
      line += line.empty() ? std::to_string(count) + " of " + std::to_string(graph_.nodes.size() - copies) + " nodes run on " + id.to_string()
                           : ", " + std::to_string(count) + " on " + id.to_string();
    placement_notes_.push_back(line + " instead of " + target_id.to_string() + ", with " + std::to_string(copies) +
                               " copies between the devices a step (`tessera ir --target " + target_id.to_string() +
                               (o.place.empty() ? "" : " --place '" + o.place + "'") + "` shows where)");
  }

  TS_ASSIGN_OR_RETURN(parts_, graph::partition_by_device(graph_));
  for (const graph::GraphPart& part : parts_) {
    if (std::any_of(devices_.begin(), devices_.end(), [&](const DeviceSlot& d) { return d.id == part.device; })) continue;
    auto it = std::find_if(others.begin(), others.end(), [&](const OpenedDevice& d) { return d.id == part.device; });
    if (it == others.end()) return internal_error("placement put nodes on '" + part.device.to_string() + "', which is not open");
    DeviceSlot slot;
    slot.id = it->id;
    slot.device = std::move(it->device);
    devices_.push_back(std::move(slot));
  }
  // Streams only where a part runs (a backend that runs nothing may have none to give).
  for (DeviceSlot& slot : devices_) {
    if (std::none_of(parts_.begin(), parts_.end(), [&](const graph::GraphPart& p) { return p.device == slot.id; })) continue;
    TS_ASSIGN_OR_RETURN(slot.stream, slot.device->create_stream());
    TS_ASSIGN_OR_RETURN(slot.moved, slot.device->create_event());
    for (auto& e : slot.done) {
      TS_ASSIGN_OR_RETURN(e, slot.device->create_event());
    }
  }

  TS_TRY(use_communicators());
  TS_TRY(make_weights());
  // Weights are imported once per device that reads them; every bucket's plan
  // binds the same buffers (the KV pools come with the cache: attach).
  for (const graph::GraphPart& part : parts_) {
    DeviceSlot& slot = slot_of(part.device);
    for (const auto& v : part.graph.values) {
      if (slot.bound.count(v.name)) continue;
      if (auto made = made_.find(v.name); made != made_.end()) {
        TS_ASSIGN_OR_RETURN(slot.bound[v.name], slot.device->import_weights(made->second));
      } else if (v.kind == graph::ValueKind::weight) {
        const WeightTensor* t = weights_->find(v.name);
        if (!t) return internal_error("weight '" + v.name + "' is not in the model");
        TS_ASSIGN_OR_RETURN(slot.bound[v.name], slot.device->import_weights(t->data));
      }
    }
  }
  return Status::ok();
}

namespace {

// `t`'s bytes for shard `sh` of a value shaped `shape`: its rows (each part's
// range) or its columns (each row's range, whole blocks).
std::vector<std::byte> cut_shard(const WeightTensor& t, const graph::WeightShard& sh, const Shape& shape) {
  const DType dt = t.desc.dtype;
  const int64_t cols = t.desc.shape.rank == 1 ? 1 : t.desc.shape[1];
  const uint64_t row_bytes = t.desc.shape.rank == 1 ? bytes_for(dt, 1) : bytes_for(dt, cols);
  std::vector<std::byte> out;
  if (sh.axis == graph::WeightShard::Axis::rows) {
    const std::vector<int64_t> parts = sh.parts.empty() ? std::vector<int64_t>{t.desc.shape[0]} : sh.parts;
    int64_t base = 0;
    for (int64_t p : parts) {
      const ShardRange r = shard_range(p, sh.world, sh.rank);
      const std::byte* from = t.data.data() + (base + r.begin) * row_bytes;
      out.insert(out.end(), from, from + r.size() * row_bytes);
      base += p;
    }
    return out;
  }
  const ShardRange r = shard_range(cols, sh.world, sh.rank);
  if (sh.widened) {
    std::vector<float> row_values((size_t)cols);
    out.resize((size_t)(shape[0] * r.size()) * sizeof(float));
    for (int64_t row = 0; row < shape[0]; ++row) {
      dequantize_row(dt, t.data.data() + row * row_bytes, row_values.data(), cols);
      std::memcpy(out.data() + (size_t)(row * r.size()) * sizeof(float), row_values.data() + r.begin, (size_t)r.size() * sizeof(float));
    }
    return out;
  }
  const uint64_t skip = bytes_for(dt, r.begin), take = bytes_for(dt, r.size());
  out.resize((size_t)(shape[0] * take));
  for (int64_t row = 0; row < shape[0]; ++row)
    std::memcpy(out.data() + row * take, t.data.data() + row * row_bytes + skip, take);
  return out;
}

}  // namespace

Status ModelRunner::cut_shards() {
  struct Cut {
    std::shared_ptr<const void> base;  // the model's own storage, still read by the weights left whole
    std::vector<std::vector<std::byte>> shards;
  };
  auto cut = std::make_shared<Cut>();
  cut->base = weights_->storage;
  auto view = std::make_shared<ModelWeights>(*weights_);
  size_t widened = 0;
  std::string first_widened;
  for (const graph::Value& v : graph_.values) {
    if (!v.shard) continue;
    const std::string& source = v.shard->source.empty() ? v.name : v.shard->source;
    const WeightTensor* t = weights_->find(source);
    if (!t) return internal_error("tensor parallel: weight '" + source + "' is not in the model");
    std::vector<std::byte> bytes = cut_shard(*t, *v.shard, v.desc.shape);
    if (bytes.size() != v.desc.bytes()) return internal_error(v.name + ": its shard has " + std::to_string(bytes.size()) + " bytes, not " + std::to_string(v.desc.bytes()));
    WeightTensor shard{v.name, v.desc, {}};
    cut->shards.push_back(std::move(bytes));
    shard.data = cut->shards.back();
    auto it = std::find_if(view->tensors.begin(), view->tensors.end(), [&](const WeightTensor& w) { return w.name == v.name; });
    if (it != view->tensors.end()) *it = shard;
    else view->tensors.push_back(shard);
    if (source == v.name) weights_->release_copied(t->data);
    if (v.shard->widened) ++widened;
    if (v.shard->widened && first_widened.empty())
      first_widened = v.name + " (" + std::string(name(t->desc.dtype)) + ", blocks of " + std::to_string(traits(t->desc.dtype).block_elems) +
                      " columns)";
  }
  // Never silently: a weight held wider than the file's type costs memory and bandwidth.
  if (widened)
    placement_notes_.push_back("--tensor-parallel " + std::to_string(options_.parallel.tensor) + ": " + first_widened +
                               " is held as f32 on each rank: a rank's columns are not whole blocks" +
                               (widened > 1 ? " (and " + std::to_string(widened - 1) + " more weights like it)" : ""));
  // Nor a table every rank holds whole (graph/passes/tensor_parallel.cpp).
  for (const graph::Node& n : graph_.nodes) {
    if (n.op != OpKind::embedding || options_.parallel.tensor < 2) continue;
    const graph::Value& table = graph_.value(n.inputs[0]);
    if (table.shard) continue;
    placement_notes_.push_back("--tensor-parallel " + std::to_string(options_.parallel.tensor) + ": " + table.name + " (" +
                               std::string(name(table.desc.dtype)) + ", " + std::to_string(table.desc.shape[1]) +
                               " columns) is whole on each rank: a rank's share of its columns is not whole blocks of " +
                               std::to_string(traits(table.desc.dtype).block_elems));
  }
  view->storage = cut;
  weights_ = std::move(view);
  return Status::ok();
}

// Each device that runs a collective gets its communicator: the target's
// own where its backend has one (NCCL, RCCL), the CPU's (MPI) on the CPU.
Status ModelRunner::use_communicators() {
  if (!tp_.group) return Status::ok();
  for (DeviceSlot& slot : devices_) {
    const bool runs_collectives = std::any_of(parts_.begin(), parts_.end(), [&](const graph::GraphPart& p) {
      return p.device == slot.id && std::any_of(p.graph.nodes.begin(), p.graph.nodes.end(), [](const graph::Node& n) {
               return n.op == OpKind::all_reduce || n.op == OpKind::all_gather || n.op == OpKind::send || n.op == OpKind::recv;
             });
    });
    if (!runs_collectives) continue;
    auto own = slot.device->create_communicator(*tp_.group);
    if (own) {
      TS_TRY(slot.device->use_communicator(*own));
    } else if (slot.id.backend == "cpu") {
      TS_TRY(slot.device->use_communicator(tp_.host_comm));
    } else {
      return own.status().with_context("--tensor-parallel: " + slot.id.to_string());
    }
  }
  return Status::ok();
}

// What the passes made of the model's weights (packed or reordered:
// make_weight) and the constants they folded (a RoPE table), all in one
// allocation on huge pages (core/huge_pages.h), which decode streams every
// step.
Status ModelRunner::make_weights() {
  std::vector<std::pair<const graph::Value*, uint64_t>> plan;  // each made value and its offset
  std::set<std::string> seen;
  uint64_t total = 0;
  for (const graph::GraphPart& part : parts_)
    for (const auto& v : part.graph.values) {
      const bool made = v.kind == graph::ValueKind::constant ||
                        (v.kind == graph::ValueKind::weight && (!v.packed_from.empty() || v.layout != WeightLayout::rows));
      if (!made || !seen.insert(v.name).second) continue;
      plan.emplace_back(&v, total);
      total += (v.desc.bytes() + 63) / 64 * 64;
    }
  if (plan.empty()) return Status::ok();
  made_bytes_ = allocate_huge_pages(total);
  if (!made_bytes_) return resource_exhausted("runner: cannot allocate " + std::to_string(total) + " bytes for the packed and reordered weights");
  for (const auto& [vp, offset] : plan) {
    const graph::Value& v = *vp;
    const std::span<std::byte> out(made_bytes_.get() + offset, v.desc.bytes());
    if (v.kind == graph::ValueKind::constant) {
      TS_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, graph::materialize_constant(v));
      if (bytes.size() != out.size()) return internal_error(v.name + ": the folded constant does not match its shape");
      std::memcpy(out.data(), bytes.data(), bytes.size());
    } else {
      TS_TRY(make_weight(v, out));
    }
    made_[v.name] = out;
  }
  return Status::ok();
}

// A weight the passes packed or reordered, into `out`: the model's own
// bytes reordered straight from there, or the parts' rows in order
// (row-major: one after another), written into place, or gathered first
// where they are reordered too. The file's pages of what was copied then
// leave this process's memory (ModelWeights::release_copied).
Status ModelRunner::make_weight(const graph::Value& v, std::span<std::byte> out) const {
  const std::string mismatch = v.name + ": packed bytes do not match its shape";
  if (v.packed_from.empty()) {
    const WeightTensor* t = weights_->find(v.name);
    if (!t) return internal_error("weight '" + v.name + "' is not in the model");
    if (t->data.size() != out.size()) return internal_error(mismatch);
    TS_TRY(relayout_into(WeightLayout::rows, v.layout, v.desc.dtype, v.desc.shape[0], v.desc.shape[1], t->data, out));
    weights_->release_copied(t->data);
    return Status::ok();
  }
  const bool reorder = v.layout != WeightLayout::rows;
  std::vector<std::byte> parts;  // the parts' rows, where they are reordered after
  uint64_t at = 0;
  for (const std::string& part_name : v.packed_from) {
    const WeightTensor* t = weights_->find(part_name);
    if (!t || t->desc.dtype != v.desc.dtype || t->desc.shape[1] != v.desc.shape[1])
      return internal_error(v.name + ": part '" + part_name + "' is missing or does not match the packed layout");
    if (at + t->data.size() > out.size()) return internal_error(mismatch);
    if (reorder) parts.insert(parts.end(), t->data.begin(), t->data.end());
    else std::memcpy(out.data() + at, t->data.data(), t->data.size());
    at += t->data.size();
    weights_->release_copied(t->data);
  }
  if (at != out.size()) return internal_error(mismatch);
  if (!reorder) return Status::ok();
  return relayout_into(WeightLayout::rows, v.layout, v.desc.dtype, v.desc.shape[0], v.desc.shape[1], parts, out);
}

Expected<std::unique_ptr<KvCache>> ModelRunner::create_kv_cache() {
  std::vector<KvCache::Pool> pools;
  for (size_t p = 0; p < parts_.size(); ++p) {
    const graph::GraphPart& part = parts_[p];
    const size_t slot = (size_t)(&slot_of(part.device) - devices_.data());
    for (const auto& v : part.graph.values) {
      if (v.kind != graph::ValueKind::kv_pool) continue;
      if (std::any_of(pools.begin(), pools.end(), [&](const KvCache::Pool& k) { return k.name == v.name; })) continue;
      KvCache::Pool pool{v.name, slot, nullptr, (uint64_t)kv_spec_.block_size * (uint64_t)v.desc.row_bytes()};
      TS_ASSIGN_OR_RETURN(pool.buffer, devices_[slot].device->allocate(v.desc.bytes(), MemoryUse::kv_cache));
      pools.push_back(std::move(pool));
    }
  }
  return std::make_unique<KvCache>(kv_spec_, std::move(pools));
}

Status ModelRunner::attach(KvCache& kv) {
  if (kv_) return invalid_argument("runner: a KV cache is attached already");
  if (kv.spec().num_blocks != kv_spec_.num_blocks || kv.spec().block_size != kv_spec_.block_size)
    return invalid_argument("runner: the KV cache has " + std::to_string(kv.spec().num_blocks) + " blocks of " +
                            std::to_string(kv.spec().block_size) + " tokens; the graph was built for " +
                            std::to_string(kv_spec_.num_blocks) + " of " + std::to_string(kv_spec_.block_size));
  if (kv.spec().dtype != kv_spec_.dtype)
    return invalid_argument("runner: the KV cache's pools are " + std::string(name(kv.spec().dtype)) + "; the graph was built for " +
                            std::string(name(kv_spec_.dtype)));
  kv_ = &kv;
  // Where the step results land: pinned memory of the device that makes each (output k of the graph).
  auto maker = [&](size_t k) -> Device& {
    for (const graph::GraphPart& p : parts_)
      if (p.returns.size() > k && p.returns[k] >= 0) return *slot_of(p.device).device;
    return *devices_[0].device;  // partition exports every output, so unreached
  };
  const uint64_t rows = (uint64_t)options_.max_prefill_tokens;
  Device& logits_device = maker(0);
  for (InFlight& f : in_flight_) {
    TS_ASSIGN_OR_RETURN(f.logits, logits_device.allocate(rows * (uint64_t)config().vocab_size * sizeof(float), MemoryUse::host_staging));
    if (options_.sample_on_device) {
      TS_ASSIGN_OR_RETURN(f.tokens, maker(1).allocate(rows * sizeof(int32_t), MemoryUse::host_staging));
    }
  }
  const Status st = compile_buckets();
  if (!st.is_ok()) {
    programs_.clear();
    part_buffers_.clear();
    kv_ = nullptr;
  }
  return st;
}

// Token buckets: 1 (decode), then powers of two up to the prefill limit.
// Context buckets: powers of two from min_context_bucket up to the runner's
// context, so a short conversation's plan sizes its block tables and
// attention scratch to what it reaches, not to the model's whole context.
std::pair<int32_t, int32_t> ModelRunner::bucket_for(int32_t n_tokens, int32_t context) const {
  int32_t tokens = 1;
  while (tokens < n_tokens) tokens *= 2;
  tokens = std::min(tokens, options_.max_prefill_tokens);
  int32_t ctx = std::max(1, options_.min_context_bucket);
  while (ctx < context) ctx *= 2;
  return {tokens, std::min(ctx, max_context_)};
}

std::vector<std::pair<int32_t, int32_t>> ModelRunner::bucket_keys() const {
  std::vector<std::pair<int32_t, int32_t>> keys;
  for (int32_t t = 1;; t *= 2) {
    const int32_t tokens = std::min(t, options_.max_prefill_tokens);
    for (int32_t c = std::max(1, options_.min_context_bucket);; c *= 2) {
      keys.push_back({tokens, std::min(c, max_context_)});
      if (c >= max_context_) break;
    }
    if (tokens >= options_.max_prefill_tokens) break;
  }
  return keys;
}

// Every bucket lowered first, so each part's arena and transfer buffers can be
// sized for the largest bucket and shared by all (steps on one stream run one
// after another, so no two buckets' activations are live at once); then
// compiled, binding them.
Status ModelRunner::compile_buckets() {
  struct Lowered {
    std::pair<int32_t, int32_t> key;
    ShapeBucket bucket;
    std::vector<Plan> plans;  // by part
  };
  std::vector<Lowered> lowered;
  part_buffers_.clear();
  part_buffers_.resize(parts_.size());
  std::vector<uint64_t> arena_bytes(parts_.size(), 0);
  std::vector<std::map<std::string, uint64_t>> transfer_bytes(parts_.size());
  for (const auto& key : bucket_keys()) {
    const int32_t blocks = std::min(max_blocks_per_seq_, (key.second + options_.block_size - 1) / options_.block_size);
    // A step carries at least one token per sequence: a bucket of T tokens
    // holds at most T sequences, so (tokens, sequences, context) buckets
    // follow from (tokens, context) and decode's scratch is sized to its rows.
    Lowered l{key, ShapeBucket{key.first, std::min(key.first, options_.max_seqs), key.first, blocks}, {}};
    for (size_t p = 0; p < parts_.size(); ++p) {
      TS_ASSIGN_OR_RETURN(Plan plan, graph::lower(parts_[p].graph, l.bucket));
      for (const PlanBuffer& pb : plan.buffers) {
        if (pb.role == BufferRole::arena) arena_bytes[p] = std::max(arena_bytes[p], pb.bytes);
        if (pb.role == BufferRole::transfer) transfer_bytes[p][pb.name] = std::max(transfer_bytes[p][pb.name], pb.bytes);
      }
      l.plans.push_back(std::move(plan));
    }
    lowered.push_back(std::move(l));
  }
  for (size_t p = 0; p < parts_.size(); ++p) {
    Device& dev = *slot_of(parts_[p].device).device;
    TS_ASSIGN_OR_RETURN(part_buffers_[p].arena, dev.allocate(std::max<uint64_t>(arena_bytes[p], 64), MemoryUse::activations));
    for (const auto& [name, bytes] : transfer_bytes[p]) {
      TS_ASSIGN_OR_RETURN(part_buffers_[p].transfers[name], dev.allocate(std::max<uint64_t>(bytes, 4), MemoryUse::activations));
    }
  }
  for (Lowered& l : lowered) {
    BucketProgram prog;
    prog.bucket = l.bucket;
    for (size_t p = 0; p < parts_.size(); ++p) {
      const graph::GraphPart& part = parts_[p];
      PartExecutable pe;
      pe.part = p;
      pe.slot = (size_t)(&slot_of(part.device) - devices_.data());
      DeviceSlot& slot = devices_[pe.slot];
      const Plan& plan = l.plans[p];
      std::vector<Buffer*> bound(plan.buffers.size(), nullptr);
      for (size_t i = 0; i < plan.buffers.size(); ++i) {
        const PlanBuffer& pb = plan.buffers[i];
        if (pb.role == BufferRole::arena) {
          bound[i] = part_buffers_[p].arena.get();
        } else if (pb.role == BufferRole::transfer) {
          bound[i] = part_buffers_[p].transfers.at(pb.name).get();
        } else if (pb.role == BufferRole::kv_pool) {
          bound[i] = kv_->pool(pb.name);
          if (!bound[i]) return internal_error("KV pool '" + pb.name + "' is not in the cache");
        } else if (is_bound(pb.role)) {
          auto b = slot.bound.find(pb.name);
          if (b == slot.bound.end()) return internal_error("'" + pb.name + "' is not bound on " + slot.id.to_string());
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
      auto exe = slot.device->compile(plan, bound);
      if (!exe)
        return exe.status().with_context("compiling the " + std::to_string(l.key.first) + "-token, " +
                                         std::to_string(l.key.second) + "-position bucket for " + slot.id.to_string());
      pe.exe = std::move(*exe);
      prog.parts.push_back(std::move(pe));
    }
    programs_[l.key] = std::move(prog);
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

uint64_t ModelRunner::arena_bytes() const {
  uint64_t total = 0;
  for (const PartBuffers& pb : part_buffers_) total += pb.arena ? pb.arena->size() : 0;
  return total;
}

Expected<ModelRunner::BucketProgram*> ModelRunner::program_for(int32_t n_tokens, int32_t context) {
  if (!kv_) return invalid_argument("runner: no KV cache attached (create_kv_cache, then attach)");
  if (n_tokens < 1 || n_tokens > options_.max_prefill_tokens)
    return invalid_argument("step: " + std::to_string(n_tokens) + " tokens; a step holds 1 to " +
                            std::to_string(options_.max_prefill_tokens));
  if (context < 1 || context > max_context_)
    return invalid_argument("step: a sequence reaches " + std::to_string(context) + " positions; the runner holds 1 to " +
                            std::to_string(max_context_));
  auto it = programs_.find(bucket_for(n_tokens, context));
  if (it == programs_.end()) return internal_error("runner: no plan was compiled for a " + std::to_string(n_tokens) + "-token step");
  return &it->second;
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

bool wants(StepOutputs have, StepOutputs bit) { return ((uint8_t)have & (uint8_t)bit) != 0; }

}  // namespace

// A value an earlier part made, into this part's transfer buffer, in stream
// order on both sides: straight into host memory when the reader has it (the
// CPU's), straight from it when the maker has it, else through staging.
Status ModelRunner::move_input(const BucketProgram& prog, const PartExecutable& part, const PartExecutable::Input& in,
                               const StepArgs& args) {
  const PartExecutable& src = prog.parts[in.src_part];
  DeviceSlot& from = devices_[src.slot];
  DeviceSlot& to = devices_[part.slot];
  Buffer& src_buf = src.exe->buffer(in.src.buffer);
  Buffer& dst_buf = part.exe->buffer(in.buffer);
  const size_t bytes = (size_t)(rows_at(in.src.rows, in.src.desc, args) * (int64_t)in.src.desc.row_bytes());
  if (std::byte* dst = dst_buf.host_data()) {
    TS_TRY(from.stream->download({dst, bytes}, src_buf, in.src.offset));
    TS_TRY(from.stream->record(*from.moved));
    return to.stream->wait(*from.moved);
  }
  TS_TRY(from.stream->record(*from.moved));
  if (std::byte* s = src_buf.host_data()) {
    TS_TRY(to.stream->wait(*from.moved));
    return to.stream->upload(dst_buf, 0, {s + in.src.offset, bytes});
  }
  if (staging_.size() < bytes) staging_.resize(bytes);
  TS_TRY(from.stream->download({staging_.data(), bytes}, src_buf, in.src.offset));
  TS_TRY(from.stream->record(*from.moved));
  TS_TRY(from.moved->synchronize());
  return to.stream->upload(dst_buf, 0, {staging_.data(), bytes});
}

// Copy-on-write before the step writes: every layer's pools, on each device that holds some.
Status ModelRunner::run_block_copies(std::span<const BlockCopy> copies) {
  if (copies.empty()) return Status::ok();
  for (size_t d = 0; d < devices_.size(); ++d) {
    const std::vector<KvPoolCopy> pools = kv_->in_place_copies(d);
    if (!pools.empty()) TS_TRY(devices_[d].stream->copy_blocks(pools, copies));
  }
  return Status::ok();
}

// The step's results into the slot's pinned memory, then an event on every
// device that ran a part (collect waits for them all).
Status ModelRunner::queue_results(const BucketProgram& prog, InFlight& f, int slot_index, const StepArgs& args) {
  for (size_t k = 0; k < 2; ++k) {
    const StepOutputs bit = k == 0 ? StepOutputs::logits : StepOutputs::tokens;
    if (!wants(f.outputs, bit)) continue;
    for (const PartExecutable& pe : prog.parts) {
      const int at = parts_[pe.part].returns.size() > k ? parts_[pe.part].returns[k] : -1;
      if (at < 0) continue;
      const PlanTensor& t = pe.exe->plan().outputs.at((size_t)at);
      // R rows of logits [R, vocab]; R ids [R] (one element a row).
      const uint64_t row = t.desc.shape.rank > 1 ? (uint64_t)t.desc.row_bytes() : (uint64_t)bytes_for(t.desc.dtype, 1);
      const uint64_t bytes = (uint64_t)args.n_logit_rows * row;
      Buffer& dst = k == 0 ? *f.logits : *f.tokens;
      if (bytes) TS_TRY(devices_[pe.slot].stream->copy(pe.exe->buffer(t.buffer), t.offset, dst, 0, bytes));
    }
  }
  for (DeviceSlot& d : devices_)
    if (d.stream) TS_TRY(d.stream->record(*d.done[(size_t)slot_index]));
  return Status::ok();
}

// What the leader reads to send a step to the other ranks, checked before
// it reads it: the arrays (core/hal/step_check.h) and counts it can copy.
Status ModelRunner::check_step_to_send(const StepArgs& args) const {
  TS_TRY(check_step_arrays(args));
  if (args.n_tokens < 0 || args.n_seqs < 0 || args.n_logit_rows < 0 || args.n_seqs > options_.max_seqs)
    return invalid_argument("step: negative counts, or " + std::to_string(args.n_seqs) + " sequences where the runner takes " +
                            std::to_string(options_.max_seqs));
  return Status::ok();
}

// Queues one step's work on its devices: its bucket's program, the block
// tables at that bucket's stride, the block copies first.
Expected<ModelRunner::Queued> ModelRunner::queue_step(const StepArgs& args, std::span<const BlockCopy> block_copies) {
  int32_t context = 1;
  if (args.seq_lens && args.n_seqs > 0 && args.n_seqs <= options_.max_seqs)
    for (int32_t s = 0; s < args.n_seqs; ++s) context = std::max(context, args.seq_lens[s]);
  context = std::min(context, max_context_);  // a longer one is refused by the step checks, naming it
  TS_ASSIGN_OR_RETURN(BucketProgram * prog, program_for(args.n_tokens, context));
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
  TS_TRY(run_block_copies(block_copies));
  for (const PartExecutable& part : prog->parts) {
    for (const PartExecutable::Input& in : part.inputs) TS_TRY(move_input(*prog, part, in, a));
    TS_TRY(devices_[part.slot].stream->run(*part.exe, a));
  }
  return Queued{prog, a};
}

Expected<StepTicket> ModelRunner::submit(const StepRequest& request) {
  const StepArgs& args = request.args;
  if (wants(request.outputs, StepOutputs::tokens) && !options_.sample_on_device)
    return invalid_argument("step: tokens were asked for, but the runner was not built to sample on the device");
  // The next in-flight slot in turn; it must have been collected.
  const int slot_index = (int)(next_ticket_ % kMaxInFlight);
  InFlight& f = in_flight_[(size_t)slot_index];
  if (!f.collected)
    return invalid_argument("runner: " + std::to_string(kMaxInFlight) + " steps are in flight; collect one before submitting");
  f.outputs = request.outputs;
  f.rows = args.n_logit_rows;
  if (pipelined_ && leader_) {
    TS_TRY(check_step_to_send(args));
    TS_TRY(submit_micro_batches(request, f));
  } else {
    // Every rank runs the step: the followers get it first (they check it as this rank does).
    if (leader_) {
      TS_TRY(check_step_to_send(args));
      encode_step(args, max_blocks_per_seq_, request.block_copies, (int32_t)request.outputs, step_wire_);
      TS_TRY(send_control(*tp_.group, ControlKind::step, step_wire_));
    }
    TS_ASSIGN_OR_RETURN(const Queued q, queue_step(args, request.block_copies));
    // A pipeline stage's results go to the next stage, inside its plan; the leader receives the logits.
    if (!pipelined_) TS_TRY(queue_results(*q.prog, f, slot_index, q.args));
  }
  if (pipelined_)
    for (DeviceSlot& d : devices_)
      if (d.stream) TS_TRY(d.stream->record(*d.done[(size_t)slot_index]));
  f.ticket = next_ticket_++;
  f.collected = false;
  return f.ticket;
}

Expected<StepResult> ModelRunner::collect(StepTicket ticket) {
  const int slot_index = (int)(ticket % kMaxInFlight);
  InFlight& f = in_flight_[(size_t)slot_index];
  if (ticket == 0 || f.ticket != ticket || f.collected)
    return invalid_argument("runner: ticket " + std::to_string(ticket) + " is not a step in flight");
  f.collected = true;
  for (DeviceSlot& d : devices_)
    if (d.stream) TS_TRY(d.done[(size_t)slot_index]->synchronize());
  StepResult r;
  const size_t rows = (size_t)f.rows;
  if (pipelined_) {
    if (!leader_) return r;  // a later stage's results went on to the next stage
    for (uint64_t handle : f.posted) TS_TRY(tp_.host_comm->wait_recv(handle));
    f.posted.clear();
    // The greedy ids from the logits the last stage sent.
    const size_t vocab = (size_t)config().vocab_size;
    const float* logits = reinterpret_cast<const float*>(f.logits->host_data());
    if (wants(f.outputs, StepOutputs::tokens))
      for (size_t i = 0; i < rows; ++i)
        reinterpret_cast<int32_t*>(f.tokens->host_data())[i] =
            (int32_t)(std::max_element(logits + i * vocab, logits + (i + 1) * vocab) - (logits + i * vocab));
  }
  if (wants(f.outputs, StepOutputs::logits))
    r.logits = {reinterpret_cast<const float*>(f.logits->host_data()), rows * (size_t)config().vocab_size};
  if (wants(f.outputs, StepOutputs::tokens)) r.tokens = {reinterpret_cast<const int32_t*>(f.tokens->host_data()), rows};
  return r;
}

Status ModelRunner::step(const StepArgs& args, std::span<float> logits_out, std::span<const BlockCopy> block_copies) {
  const uint64_t vocab = (uint64_t)config().vocab_size;
  if (logits_out.size() < (uint64_t)std::max(args.n_logit_rows, 0) * vocab) return invalid_argument("step: logits buffer too small");
  TS_ASSIGN_OR_RETURN(const StepTicket t, submit({args, block_copies, StepOutputs::logits}));
  TS_ASSIGN_OR_RETURN(const StepResult r, collect(t));
  std::copy(r.logits.begin(), r.logits.end(), logits_out.begin());
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

namespace tessera {

Expected<KvBudget> kv_budget_for(Device& device, uint64_t weight_bytes, double fraction, uint64_t cap_bytes) {
  if (fraction < 0)
    fraction = device.info().kind == DeviceKind::gpu_discrete ? RunnerOptions::kDefaultKvFractionGpu : RunnerOptions::kDefaultKvFractionHost;
  if (!(fraction > 0 && fraction <= 1)) return invalid_argument("kv memory fraction: must be in (0, 1], got " + std::to_string(fraction));
  KvBudget b;
  auto free = device.free_memory();
  if (!free) return b;  // unknown: the caller's other rule applies
  b.free_bytes = *free;
  // The CPU keeps the weights where they are (a mapped file, or memory
  // already counted as used); another device copies them in.
  b.weight_bytes = device.info().kind == DeviceKind::cpu ? 0 : weight_bytes;
  const uint64_t left = b.free_bytes > b.weight_bytes ? b.free_bytes - b.weight_bytes : 0;
  b.bytes = std::min<uint64_t>((uint64_t)((double)left * fraction), cap_bytes);
  return b;
}

Expected<RunnerWithCache> open_runner(std::shared_ptr<const ModelWeights> weights, const RunnerOptions& options) {
  RunnerWithCache r;
  TS_ASSIGN_OR_RETURN(r.runner, ModelRunner::create(std::move(weights), options));
  TS_ASSIGN_OR_RETURN(r.kv, r.runner->create_kv_cache());
  TS_TRY(r.runner->attach(*r.kv));
  return r;
}

}  // namespace tessera
