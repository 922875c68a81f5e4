#include "hal_harness.h"

#include <cstdio>
#include <numeric>
#include <cstring>
#include <filesystem>

#include "backends/builtin.h"
#include "core/hal/registry.h"
#include "graph/builder.h"
#include "graph/lower.h"
#include "kernels/kv_element.h"

namespace tessera::testing {

namespace {

RowCount rows_of(StepField f) {
  switch (f) {
    case StepField::token_ids:
    case StepField::positions:
    case StepField::slot_mapping: return RowCount::tokens;
    case StepField::logit_rows: return RowCount::logit_rows;
    default: return RowCount::fixed;
  }
}

}  // namespace

std::vector<DeviceUnderTest>& devices_under_test() {
  static std::vector<DeviceUnderTest> devices = [] {
    register_builtin_backends();
    auto& reg = BackendRegistry::global();
    reg.load_plugins({std::filesystem::path(TESSERA_BIN).parent_path().string()});
    std::vector<DeviceUnderTest> out;
    for (Backend* b : reg.all()) {
      const auto infos = b->enumerate();
      if (infos.empty()) std::printf("[conformance] backend %s: no device (%s)\n", b->name().c_str(), b->why_none().c_str());
      for (size_t i = 0; i < infos.size(); ++i) {
        auto d = b->open((int)i);
        if (!d) {
          std::printf("[conformance] %s:%zu does not open: %s\n", b->name().c_str(), i, d.status().message().c_str());
          continue;
        }
        const std::string label = b->name() + ":" + std::to_string(i);
        std::printf("[conformance] testing %s (%s)\n", label.c_str(), infos[i].name.c_str());
        out.push_back({label, std::move(*d)});
      }
    }
    return out;
  }();
  return devices;
}

std::vector<std::byte> kv_pool_bytes(const std::vector<float>& v, DType t) {
  std::vector<std::byte> b(bytes_for(t, (int64_t)v.size()));
  kernels::store_kv_row(b.data(), t, 0, v.data(), (int64_t)v.size());  // whole rows: the block types quantize 32 at a time
  return b;
}

std::string unsupported_reason(Device& device, OpKind op, DType weight_dtype) {
  const KernelChoice k = device.kernels().query({op, DType::f32, weight_dtype});
  return k.supported ? std::string() : k.reason.empty() ? "unsupported" : k.reason;
}

std::string unsupported_reason(Device& device, const OpCase& c, DType weight_dtype) {
  OpQuery q{c.op, DType::f32, weight_dtype};
  q.params = c.params;
  // rope's third input (rope_kv_append's eighth) as a weight of one dimension: frequency factors.
  const size_t extra = c.op == OpKind::rope ? 2 : c.op == OpKind::rope_kv_append ? 7 : c.inputs.size();
  q.rope_freq_factors = extra < c.inputs.size() && c.inputs[extra].kind == OpInput::weight && c.inputs[extra].desc.shape.rank == 1;
  for (const OpInput& in : c.inputs)
    if (in.kind == OpInput::pool) {
      q.kv_dtype = in.desc.dtype;
      break;
    }
  const KernelChoice k = device.kernels().query(q);
  return k.supported ? std::string() : k.reason.empty() ? "unsupported" : k.reason;
}

std::vector<graph::ValueId> add_inputs(graph::GraphBuilder& b, const OpCase& c) {
  std::vector<graph::ValueId> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const OpInput& in = c.inputs[i];
    const std::string name = "in" + std::to_string(i);
    if (in.kind == OpInput::weight) ins.push_back(b.weight(name, in.desc));
    else if (in.kind == OpInput::pool) ins.push_back(b.kv_pool(name, in.desc));
    else ins.push_back(b.step_input(in.field, rows_of(in.field)));
  }
  return ins;
}

Expected<CompiledOp> compile_op(Device& device, const OpCase& c) {
  graph::GraphBuilder b("conformance");
  const std::vector<graph::ValueId> ins = add_inputs(b, c);
  const auto outs = b.op_n(c.op, c.params, ins, std::string(name(c.op)));
  for (auto o : outs) b.mark_output(o);
  TS_ASSIGN_OR_RETURN(graph::Graph g, b.finish());
  for (graph::Node& n : g.nodes) n.tile = c.tile;
  return compile_graph(device, g, c);
}

Expected<CompiledOp> compile_graph(Device& device, const graph::Graph& g, const OpCase& c) {
  TS_ASSIGN_OR_RETURN(Plan plan, graph::lower(g, c.bucket));

  // Bind inputs by name: weights imported, pools allocated and filled.
  CompiledOp op;
  std::vector<Buffer*> bound(plan.buffers.size(), nullptr);
  TS_ASSIGN_OR_RETURN(op.stream, device.create_stream());
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& pb = plan.buffers[i];
    if (pb.role != BufferRole::weight && pb.role != BufferRole::kv_pool) continue;
    const OpInput& in = c.inputs[(size_t)std::stoi(pb.name.substr(2))];
    if (pb.role == BufferRole::weight) {
      TS_ASSIGN_OR_RETURN(auto buf, device.import_weights(in.bytes));
      op.owned.push_back(std::move(buf));
    } else {
      TS_ASSIGN_OR_RETURN(auto buf, device.allocate(pb.bytes, MemoryUse::kv_cache));
      TS_TRY(op.stream->upload(*buf, 0, in.bytes));
      op.owned.push_back(std::move(buf));
      op.pools.push_back(op.owned.back().get());
    }
    bound[i] = op.owned.back().get();
  }
  TS_ASSIGN_OR_RETURN(op.exe, device.compile(plan, bound));
  return op;
}

StepArgs step_args(const OpCase& c) {
  StepArgs a;
  a.token_ids = c.token_ids.data();
  a.positions = c.positions.data();
  a.slot_mapping = c.slot_mapping.data();
  a.n_tokens = c.n_tokens;
  a.query_start = c.query_start.data();
  a.seq_lens = c.seq_lens.data();
  a.block_tables = c.block_tables.data();
  a.n_seqs = (int32_t)c.seq_lens.size();
  a.logit_rows = c.logit_rows.data();
  a.n_logit_rows = (int32_t)c.logit_rows.size();
  return a;
}

Expected<std::vector<std::vector<std::byte>>> run_op(Device& device, const OpCase& c) {
  TS_ASSIGN_OR_RETURN(CompiledOp op, compile_op(device, c));
  return run_compiled(op, c);
}

Expected<std::vector<std::vector<std::byte>>> run_compiled(CompiledOp& op, const OpCase& c) {
  Stream& stream = *op.stream;
  TS_TRY(stream.run(*op.exe, step_args(c)));
  TS_TRY(stream.synchronize());

  std::vector<std::vector<std::byte>> results;
  if (c.op == OpKind::kv_append) {
    for (Buffer* p : op.pools) {
      std::vector<std::byte> bytes(p->size());
      TS_TRY(stream.download(bytes, *p, 0));
      results.push_back(std::move(bytes));
    }
  } else {
    for (const PlanTensor& out : op.exe->plan().outputs) {
      // Rows actually produced this step.
      TensorDesc d = out.desc;
      if (out.rows == RowCount::tokens) d.shape[0] = c.n_tokens;
      if (out.rows == RowCount::logit_rows) d.shape[0] = (int64_t)c.logit_rows.size();
      std::vector<std::byte> bytes(TensorDesc::contiguous(d.dtype, d.shape).bytes());
      TS_TRY(stream.download(bytes, op.exe->buffer(out.buffer), out.offset));
      results.push_back(std::move(bytes));
    }
  }
  TS_TRY(stream.synchronize());
  return results;
}

void plain_step(OpCase& c, int32_t n) {
  c.n_tokens = n;
  c.bucket = {n, 1, n, 1};
  c.token_ids.assign((size_t)n, 0);
  c.positions.resize((size_t)n);
  std::iota(c.positions.begin(), c.positions.end(), 0);
  c.slot_mapping.assign((size_t)n, 0);
  c.query_start = {0, n};
  c.seq_lens = {n};
  c.block_tables = {0};
}

}  // namespace tessera::testing
