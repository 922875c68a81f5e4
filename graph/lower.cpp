#include "graph/lower.h"

#include <string>

#include "graph/memory_plan.h"

namespace tessera::graph {

namespace {

int64_t rows_for(RowCount rows, int64_t fixed, const ShapeBucket& b) {
  switch (rows) {
    case RowCount::fixed: return fixed;
    case RowCount::tokens: return b.max_tokens;
    case RowCount::logit_rows: return b.max_logit_rows;
  }
  return fixed;
}

int64_t step_field_elems(StepField f, const ShapeBucket& b) {
  switch (f) {
    case StepField::token_ids:
    case StepField::positions:
    case StepField::slot_mapping: return b.max_tokens;
    case StepField::query_start: return b.max_seqs + 1;
    case StepField::seq_lens: return b.max_seqs;
    case StepField::block_tables: return (int64_t)b.max_seqs * b.max_blocks_per_seq;
    case StepField::logit_rows: return b.max_logit_rows;
    case StepField::none: return 0;
  }
  return 0;
}

// The descriptor of a value at this bucket.
TensorDesc resolve(const Value& v, const ShapeBucket& b) {
  if (v.kind == ValueKind::step_input)
    return TensorDesc::contiguous(DType::i32, Shape{step_field_elems(v.field, b)});
  if (v.rows == RowCount::fixed) return v.desc;
  Shape s = v.desc.shape;
  s[0] = rows_for(v.rows, s[0], b);
  return TensorDesc::contiguous(v.desc.dtype, s);
}

}  // namespace

Expected<Plan> lower(const Graph& g, const ShapeBucket& bucket) {
  if (bucket.max_tokens < 1 || bucket.max_seqs < 1 || bucket.max_logit_rows < 1 || bucket.max_blocks_per_seq < 1)
    return invalid_argument("lower: every shape bucket dimension must be at least 1");
  Plan plan;
  plan.bucket = bucket;

  std::vector<TensorDesc> descs(g.values.size());
  std::vector<uint64_t> bytes(g.values.size(), 0);
  for (size_t i = 0; i < g.values.size(); ++i) {
    descs[i] = resolve(g.values[i], bucket);
    bytes[i] = descs[i].bytes();
  }
  const MemoryPlan mem = plan_memory(g, bytes);
  TS_TRY(verify_memory_plan(g, mem));

  // Buffers: the arena first, then one per bound or per-step value.
  plan.buffers.push_back({"arena", BufferRole::arena, std::max<uint64_t>(mem.peak_bytes, 64), StepField::none});
  std::vector<PlanTensor> tensor_of(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    PlanTensor& t = tensor_of[i];
    t.desc = descs[i];
    t.rows = v.kind == ValueKind::step_input ? RowCount::fixed : v.rows;
    switch (v.kind) {
      case ValueKind::computed:
        if (v.aliases == kNoValue) {
          t.buffer = 0;
          t.offset = mem.values[i].offset;
        }
        break;
      // A constant is bound like a weight: the runner makes its bytes once (graph/constants.h) and binds them by name.
      case ValueKind::weight:
      case ValueKind::constant:
      case ValueKind::kv_pool:
      case ValueKind::transfer:
      case ValueKind::step_input: {
        PlanBuffer pb;
        pb.name = v.name;
        pb.role = v.kind == ValueKind::weight || v.kind == ValueKind::constant ? BufferRole::weight
                  : v.kind == ValueKind::kv_pool  ? BufferRole::kv_pool
                  : v.kind == ValueKind::transfer ? BufferRole::transfer
                                                  : BufferRole::step_input;
        pb.field = v.field;
        pb.bytes = bytes[i];
        t.layout = v.layout;
        t.buffer = (uint32_t)plan.buffers.size();
        plan.buffers.push_back(std::move(pb));
        break;
      }
    }
  }
  // Aliases (kv_append outputs) share their pool's buffer.
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].aliases != kNoValue) tensor_of[i] = tensor_of[(size_t)g.values[i].aliases];

  for (const Node& n : g.nodes) {
    Dispatch d{n.op, n.params, {}, {}, n.label, n.tile};
    for (ValueId in : n.inputs) d.inputs.push_back(tensor_of[(size_t)in]);
    for (ValueId out : n.outputs) d.outputs.push_back(tensor_of[(size_t)out]);
    plan.dispatches.push_back(std::move(d));
  }
  if (g.outputs.empty()) return internal_error("lower: graph has no outputs");
  for (ValueId out : g.outputs) plan.outputs.push_back(tensor_of[(size_t)out]);
  plan.logits = plan.outputs[0];
  plan.arena_peak_bytes = mem.peak_bytes;
  plan.arena_lower_bound_bytes = mem.lower_bound_bytes;
  return plan;
}

}  // namespace tessera::graph
