#pragma once
// Runs one op as a one-dispatch Plan on any Device, through the HAL exactly
// as a model runs: a graph of one node, lowered, compiled, its inputs bound
// as weights, KV pools or per-step arrays, run on a stream, outputs read
// back. Written once; every registered backend's devices go through it.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/hal/backend.h"
#include "core/status.h"
#include "graph/builder.h"
#include "graph/ir.h"

namespace tessera::testing {

struct OpInput {
  enum Kind { weight, pool, step } kind = weight;
  TensorDesc desc;               // weight and pool
  std::vector<std::byte> bytes;  // weight and pool contents
  StepField field = StepField::none;
};

struct OpCase {
  OpKind op;
  OpParams params;
  std::vector<OpInput> inputs;
  ShapeBucket bucket;
  // The step: arrays the StepArgs point into.
  std::vector<int32_t> token_ids, positions, slot_mapping, query_start, seq_lens, block_tables, logit_rows;
  int32_t n_tokens = 1;
  TileParams tile;  // the node's tile{...}, as the tiling pass would set it (batch_invariant included)
};

// Each output's bytes, in the node's order; for kv_append, the K pool then the V pool.
Expected<std::vector<std::vector<std::byte>>> run_op(Device& device, const OpCase& c);

// The case compiled and its inputs bound, not yet run: for tests that drive
// the stream themselves (several steps in flight). Members go in reverse:
// the stream waits for its work before the executable and buffers go.
struct CompiledOp {
  std::vector<std::unique_ptr<Buffer>> owned;  // weights and pools
  std::vector<Buffer*> pools;                  // kv_pool inputs, in plan order
  std::unique_ptr<Executable> exe;
  std::unique_ptr<Stream> stream;
};
Expected<CompiledOp> compile_op(Device& device, const OpCase& c);
// c.inputs declared in b (weights and KV pools named "in<i>"), in order.
std::vector<graph::ValueId> add_inputs(graph::GraphBuilder& b, const OpCase& c);
// The same for a graph of several nodes, built by the caller on add_inputs;
// it is lowered for c.bucket.
Expected<CompiledOp> compile_graph(Device& device, const graph::Graph& g, const OpCase& c);
// Runs a compiled case once with c's step; its outputs as run_op's (for a graph: those it returns, in order).
Expected<std::vector<std::vector<std::byte>>> run_compiled(CompiledOp& op, const OpCase& c);
// A step of one sequence of n tokens at positions 0..n-1, in a bucket of n
// tokens and rows: for ops that read no step array but must run in a step.
void plain_step(OpCase& c, int32_t n);
// The case's step arrays as StepArgs (pointing into `c`).
StepArgs step_args(const OpCase& c);

struct DeviceUnderTest {
  std::string label;  // "cpu:0"
  std::unique_ptr<Device> device;
};
// Every device of every backend: the built-in CPU backend and the plugins
// beside the tessera binary.
std::vector<DeviceUnderTest>& devices_under_test();

// Null when supported; else why not (from the device's kernel table).
std::string unsupported_reason(Device& device, OpKind op, DType weight_dtype);
// The same for the case's own node: its params (an attention window, a
// RoPE freq_scale) and extra inputs (frequency factors) are asked about too.
std::string unsupported_reason(Device& device, const OpCase& c, DType weight_dtype);

// Values stored as a KV pool of type t (f32, f16 or bf16: rounded to nearest
// even; q8_0, fp8_e4m3: quantized 32 at a time, whole rows), as kv_append
// stores them (kernels/kv_element.h).
std::vector<std::byte> kv_pool_bytes(const std::vector<float>& v, DType t);

template <class T>
std::vector<std::byte> as_bytes(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <class T>
std::vector<T> from_bytes(const std::vector<std::byte>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace tessera::testing
