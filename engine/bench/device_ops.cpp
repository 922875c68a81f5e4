#include "engine/bench/device_ops.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "core/quant.h"
#include "engine/bench/matmul_roofs.h"
#include "engine/bench/stats.h"
#include "graph/builder.h"
#include "graph/lower.h"
#include "core/hal/step_padding.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

struct BatchTimes {
  double median_ms = 0, min_ms = 0;  // per run
};

// One warm-up batch, then `batches` timed ones of `runs` calls of run(),
// each batch closed by synchronizing the stream.
template <typename Run>
Expected<BatchTimes> time_batches(Stream& s, int batches, int runs, Run&& run) {
  std::vector<double> per_run;
  for (int b = -1; b < batches; ++b) {
    const auto t0 = Clock::now();
    for (int r = 0; r < runs; ++r) TS_TRY(run());
    TS_TRY(s.synchronize());
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / runs;
    if (b >= 0) per_run.push_back(ms);
  }
  return BatchTimes{median(per_run), *std::min_element(per_run.begin(), per_run.end())};
}

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> random_floats(size_t n, std::mt19937& gen, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

// A one-node plan compiled on the device, its inputs bound by name "in<i>":
// weights imported, pools allocated and filled from their bytes.
struct OpPlan {
  std::vector<std::unique_ptr<Buffer>> owned;
  std::unique_ptr<Executable> exe;
};

struct OpInputSpec {
  enum Kind { weight, pool, step } kind;
  TensorDesc desc;
  std::vector<std::byte> bytes;  // weight and pool contents
  StepField field = StepField::none;
  RowCount rows = RowCount::fixed;
};

Expected<OpPlan> compile_one_op(Device& device, Stream& stream, OpKind op, OpParams params, std::vector<OpInputSpec>& inputs,
                                const ShapeBucket& bucket) {
  graph::GraphBuilder b("bench_op");
  std::vector<graph::ValueId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    const OpInputSpec& in = inputs[i];
    if (in.kind == OpInputSpec::weight) ids.push_back(b.weight(name, in.desc));
    else if (in.kind == OpInputSpec::pool) ids.push_back(b.kv_pool(name, in.desc));
    else ids.push_back(b.step_input(in.field, in.rows));
  }
  for (graph::ValueId o : b.op_n(op, std::move(params), ids, std::string(name(op)))) b.mark_output(o);
  TS_ASSIGN_OR_RETURN(graph::Graph g, b.finish());
  TS_ASSIGN_OR_RETURN(Plan plan, graph::lower(g, bucket));
  OpPlan p;
  std::vector<Buffer*> bound(plan.buffers.size(), nullptr);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer& pb = plan.buffers[i];
    if (pb.role != BufferRole::weight && pb.role != BufferRole::kv_pool) continue;
    const OpInputSpec& in = inputs[(size_t)std::stoi(pb.name.substr(2))];
    if (pb.role == BufferRole::weight) {
      TS_ASSIGN_OR_RETURN(auto buf, device.import_weights(in.bytes));
      p.owned.push_back(std::move(buf));
    } else {
      TS_ASSIGN_OR_RETURN(auto buf, device.allocate(pb.bytes, MemoryUse::kv_cache));
      TS_TRY(stream.upload(*buf, 0, in.bytes));
      p.owned.push_back(std::move(buf));
    }
    bound[i] = p.owned.back().get();
  }
  TS_ASSIGN_OR_RETURN(p.exe, device.compile(plan, bound));
  return p;
}

Expected<DeviceOpTiming> time_matmul(Device& device, Stream& stream, DType t, int64_t m, int64_t n, int64_t k,
                                     const DeviceOpOptions& o, std::mt19937& gen) {
  std::vector<OpInputSpec> in(2);
  in[0] = {OpInputSpec::weight, TensorDesc::contiguous(DType::f32, Shape{m, k}), f32_bytes(random_floats((size_t)(m * k), gen))};
  in[1] = {OpInputSpec::weight, TensorDesc::contiguous(t, Shape{n, k}), random_weights(t, n, k, gen)};
  TS_ASSIGN_OR_RETURN(OpPlan p, compile_one_op(device, stream, OpKind::matmul, NoParams{}, in, ShapeBucket{}));
  // The smallest step a plan with no KV cache accepts.
  const StepArrays s{{0}, {0}, {0}, {0, 1}, {1}, {0}, {}};
  const StepArgs args = s.args();
  // A GEMV reads its weights once per run; a GEMM's are counted once too (they stay in cache).
  TS_ASSIGN_OR_RETURN(BatchTimes bt, time_batches(stream, o.batches, o.runs_per_batch, [&] { return stream.run(*p.exe, args); }));
  DeviceOpTiming d{"matmul", std::string(name(t)), m, n, k, bytes_for(t, n * k), 2.0 * m * n * k, bt.median_ms, bt.min_ms};
  return d;
}

// One sequence's prefill of `tokens` tokens (causal), its KV already in the
// pools in block order: the FlashAttention-style prefill path.
Expected<DeviceOpTiming> time_attention_prefill(Device& device, Stream& stream, int32_t tokens, const AttentionParams& p,
                                                const DeviceOpOptions& o, std::mt19937& gen) {
  const int32_t blocks = (tokens + p.block_size - 1) / p.block_size;
  const int64_t slots = (int64_t)blocks * p.block_size, kv_width = (int64_t)p.n_kv_heads * p.head_dim;
  const int64_t q_width = (int64_t)p.n_heads * p.head_dim;
  const TensorDesc pool = TensorDesc::contiguous(DType::f32, Shape{slots, kv_width});
  std::vector<OpInputSpec> in(7);
  in[0] = {OpInputSpec::weight, TensorDesc::contiguous(DType::f32, Shape{tokens, q_width}),
           f32_bytes(random_floats((size_t)tokens * q_width, gen))};
  in[1] = {OpInputSpec::pool, pool, f32_bytes(random_floats((size_t)(slots * kv_width), gen))};
  in[2] = {OpInputSpec::pool, pool, f32_bytes(random_floats((size_t)(slots * kv_width), gen))};
  in[3] = {OpInputSpec::step, {}, {}, StepField::positions, RowCount::tokens};
  in[4] = {OpInputSpec::step, {}, {}, StepField::query_start};
  in[5] = {OpInputSpec::step, {}, {}, StepField::seq_lens};
  in[6] = {OpInputSpec::step, {}, {}, StepField::block_tables};
  const ShapeBucket bucket{tokens, 1, 1, blocks};
  TS_ASSIGN_OR_RETURN(OpPlan plan, compile_one_op(device, stream, OpKind::paged_attention, p, in, bucket));
  StepArrays s;
  s.token_ids.assign((size_t)tokens, 0);
  s.slot_mapping.assign((size_t)tokens, kNoSlot);
  for (int32_t t = 0; t < tokens; ++t) s.positions.push_back(t);
  s.query_start = {0, tokens};
  s.seq_lens = {tokens};
  for (int32_t b = 0; b < blocks; ++b) s.block_tables.push_back(b);
  const StepArgs args = s.args();
  TS_ASSIGN_OR_RETURN(BatchTimes bt, time_batches(stream, o.batches, std::max(1, o.runs_per_batch / 10),
                                                  [&] { return stream.run(*plan.exe, args); }));
  // QKᵀ and PV over the causal half: 2 · 2 · head_dim multiply-adds per (query, visible key, head).
  const double pairs = (double)tokens * (tokens + 1) / 2;
  DeviceOpTiming d{"paged_attention", "f32", tokens, p.n_heads, p.head_dim, 0, 4.0 * pairs * p.head_dim * p.n_heads,
                   bt.median_ms, bt.min_ms};
  return d;
}

}  // namespace

Expected<double> measure_copy_GBps(Device& device, uint64_t bytes, int batches) {
  TS_ASSIGN_OR_RETURN(auto stream, device.create_stream());
  TS_ASSIGN_OR_RETURN(auto a, device.allocate(bytes, MemoryUse::activations));
  TS_ASSIGN_OR_RETURN(auto b, device.allocate(bytes, MemoryUse::activations));
  TS_ASSIGN_OR_RETURN(BatchTimes bt, time_batches(*stream, batches, 5, [&] { return stream->copy(*a, 0, *b, 0, bytes); }));
  return bt.median_ms > 0 ? 2.0 * (double)bytes / bt.median_ms / 1e6 : 0.0;
}

Expected<DeviceOpReport> bench_device_ops(Device& device, const DeviceInfo& info, const DeviceOpOptions& o) {
  if (o.op != "matmul" && o.op != "attention")
    return invalid_argument("--op: '" + o.op + "' is not an operator benchmark (matmul, attention)");
  DeviceOpReport r;
  r.device = info;
  // Leave room for the ops' own buffers on a small device.
  uint64_t copy_bytes = o.copy_bytes;
  if (info.memory_bytes > 0) copy_bytes = std::min<uint64_t>(copy_bytes, info.memory_bytes / 8);
  TS_ASSIGN_OR_RETURN(r.copy_GBps, measure_copy_GBps(device, copy_bytes, o.batches));
  if (auto rate = device.measure_matrix_rate()) {
    r.matrix_GFLOPs = rate->GFLOPs;
    r.matrix_what = rate->what;
  } else {
    r.matrix_what = "not measured: " + rate.status().message();
  }
  TS_ASSIGN_OR_RETURN(auto stream, device.create_stream());
  std::mt19937 gen(7);
  if (o.op == "matmul") {
    for (DType t : o.gemv_types) {
      TS_ASSIGN_OR_RETURN(DeviceOpTiming d, time_matmul(device, *stream, t, 1, o.n, o.k, o, gen));
      r.cases.push_back(d);
    }
    for (DType t : o.gemm_types)
      for (int64_t m : o.gemm_rows) {
        TS_ASSIGN_OR_RETURN(DeviceOpTiming d, time_matmul(device, *stream, t, m, o.n, o.k, o, gen));
        r.cases.push_back(d);
      }
  } else {
    for (int32_t tokens : o.attention_tokens) {
      TS_ASSIGN_OR_RETURN(DeviceOpTiming d, time_attention_prefill(device, *stream, tokens, o.attention, o, gen));
      r.cases.push_back(d);
    }
  }
  return r;
}

}  // namespace tessera
