// Batch invariance (docs/backends.md, "Batch invariance"): a row's bits do
// not depend on the other rows of its step, its place among them, the bucket
// the plan was compiled for, or, for attention, whether its token is a
// decode or a row of a prompt chunk. On every device, through the HAL as a
// model runs (the op's rows gathered by token id, so a step may fill its
// bucket or not), under the default kernels where docs/backends.md claims it
// and under tile{batch_invariant=1} everywhere. The oracle is the same row
// computed alone, on fresh random inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <string>

#include "conformance.h"
#include "hal_harness.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

enum class Mode { default_kernels, batch_invariant };
const char* to_string(Mode m) { return m == Mode::default_kernels ? "default kernels" : "batch_invariant"; }

std::string backend_of(const std::string& label) { return label.substr(0, label.find(':')); }

// What docs/backends.md claims of the default kernels.
bool matmul_invariant_by_default(const std::string& backend, DType w, int32_t rows) {
  // f32 from 64 rows is oneDNN's sgemm where the ISA has no float panels.
  if (backend == "cpu") return cpu::matmul_kernel_name(w, rows).find("onednn") == std::string::npos;
  return false;  // vulkan: gemv up to 4 rows, gemm beyond, summing in other orders
}
bool attention_invariant_by_default(const std::string& backend) { return backend == "cpu"; }

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

double max_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs((double)a[i] - (double)b[i]));
  return m;
}

// On the CPU, body() once per runnable ISA; elsewhere once.
template <class Body>
void per_isa(const std::string& backend, Body body) {
  if (backend == "cpu") for_each_isa([&](cpu::Isa) { body(); });
  else body();
}

// c.op with its first input gathered from the table c.inputs[0] by the
// step's token ids (c.inputs[1]), as a model's first activations are: the op
// sees the step's tokens as rows of a bucket of bucket.max_tokens. Its other
// inputs are c.inputs[2...].
CompiledOp compile_on_token_rows(Device& device, const OpCase& c) {
  graph::GraphBuilder b("batch_invariance");
  const std::vector<graph::ValueId> ins = add_inputs(b, c);
  std::vector<graph::ValueId> op_ins = {b.embedding(ins[0], ins[1], "rows")};
  op_ins.insert(op_ins.end(), ins.begin() + 2, ins.end());
  b.mark_output(b.op(c.op, c.params, op_ins, std::string(name(c.op))));
  auto g = b.finish();
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  for (graph::Node& n : g->nodes)
    if (n.op == c.op) n.tile = c.tile;
  auto op = compile_graph(device, *g, c);
  REQUIRE_MESSAGE(op.has_value(), op.status().message());
  return std::move(*op);
}

// The op's output for the step in c, its rows only.
std::vector<float> run_on_token_rows(CompiledOp& op, const OpCase& c) {
  auto out = run_compiled(op, c);
  REQUIRE_MESSAGE(out.has_value(), out.status().message());
  return from_bytes<float>((*out)[0]);
}

OpInput weight_input(DType t, Shape s, std::vector<std::byte> bytes) {
  return {OpInput::weight, TensorDesc::contiguous(t, s), std::move(bytes), StepField::none};
}
OpInput step(StepField f) { return {OpInput::step, {}, {}, f}; }

// ---------------------------------------------------------------- matmul

constexpr int32_t kTableRows = 130;  // the most rows a step below takes

// y rows of x = table[ids] in a bucket of `bucket` rows.
std::vector<float> matmul_rows(Device& device, OpCase c, const std::vector<int32_t>& ids, int32_t bucket) {
  c.n_tokens = (int32_t)ids.size();
  c.bucket = {bucket, 1, bucket, 1};
  c.token_ids = ids;
  c.positions.assign(ids.size(), 0);
  c.slot_mapping.assign(ids.size(), 0);
  c.query_start = {0, (int32_t)ids.size()};
  c.seq_lens = {(int32_t)ids.size()};
  c.block_tables = {0};
  CompiledOp op = compile_on_token_rows(device, c);
  return run_on_token_rows(op, c);
}

}  // namespace

TEST_CASE("a matmul row's bits do not depend on the step's rows, its place among them or the bucket, on every device and weight dtype") {
  Rng rng(301);
  const std::vector<int32_t> row_counts = {1, 2, 3, 7, 16, 63, 64, 65, 130};
  auto& devices = devices_under_test();
  REQUIRE(!devices.empty());
  for (auto& d : devices) {
    CAPTURE(d.label);
    const std::string backend = backend_of(d.label);
    for (DType wdt : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_K, DType::q5_K, DType::q6_K, DType::q4_1, DType::q5_0, DType::q5_1, DType::iq4_nl, DType::q2_K, DType::q3_K, DType::iq4_xs}) {
      CAPTURE(name(wdt));
      if (const std::string why = unsupported_reason(*d.device, OpKind::matmul, wdt); !why.empty()) {
        MESSAGE(d.label << " does not run matmul with " << name(wdt) << ": " << why);
        continue;
      }
      // k not a multiple of 16 for the plain types (vector tails), n not of 4 (partial row groups).
      const int64_t n = 37, k = traits(wdt).block_elems == kQK_K ? 512 : traits(wdt).quantized ? 96 : 83;
      const auto table = rng.floats((size_t)(kTableRows * k), -2.0f, 2.0f);
      OpCase c{OpKind::matmul, NoParams{}, {weight_input(DType::f32, Shape{kTableRows, k}, as_bytes(table)), step(StepField::token_ids),
                                            weight_input(wdt, Shape{n, k}, random_weights(wdt, n, k, rng))}};
      for (Mode mode : {Mode::default_kernels, Mode::batch_invariant}) {
        const std::string mode_name = to_string(mode);
        CAPTURE(mode_name);
        c.tile.batch_invariant = mode == Mode::batch_invariant;
        per_isa(backend, [&] {
          std::map<int32_t, std::vector<float>> alone;  // table row -> its y row, computed alone in a bucket of one
          for (int32_t m : row_counts) {
            if (mode == Mode::default_kernels && !matmul_invariant_by_default(backend, wdt, m)) continue;
            CAPTURE(m);
            std::vector<int32_t> ids((size_t)kTableRows);
            std::iota(ids.begin(), ids.end(), 0);
            std::shuffle(ids.begin(), ids.end(), rng.engine());
            ids.resize((size_t)m);
            for (int32_t bucket : {m, kTableRows}) {
              CAPTURE(bucket);
              const std::vector<float> y = matmul_rows(*d.device, c, ids, bucket);
              for (int32_t pos : {0, m / 2, m - 1}) {
                CAPTURE(pos);
                const int32_t r = ids[(size_t)pos];
                if (!alone.count(r)) alone[r] = matmul_rows(*d.device, c, {r}, 1);
                const float* got = y.data() + (size_t)pos * n;
                CHECK_MESSAGE(same_bits(got, alone[r].data(), (size_t)n),
                              "max |difference| " << max_diff(got, alone[r].data(), (size_t)n));
              }
            }
          }
        });
      }
    }
  }
}

// ---------------------------------------------------------------- attention

namespace {

// One sequence's place in the shared pool: its context's blocks.
struct PooledSeq {
  int32_t context = 0;
  std::vector<int32_t> blocks;
};

// A step's sequences: (sequence, first query position, query count); each
// query's q row is q_row(sequence, position).
struct StepSeq {
  int seq;
  int32_t first, count;
};

struct AttentionWorld {
  AttentionParams p;
  int32_t max_blocks = 48;
  std::vector<PooledSeq> seqs;
  int64_t slots = 0;
  std::vector<float> k_pool, v_pool, q_table;
  std::vector<int32_t> q_base;  // seq s, position j: q row q_base[s] + j
  DType kv = DType::f32;        // the pools' type

  AttentionWorld(AttentionParams params, const std::vector<int32_t>& contexts, Rng& rng, DType kv_type = DType::f32)
      : p(params), kv(kv_type) {
    int32_t blocks = 0;
    for (int32_t ctx : contexts) blocks += (ctx + p.block_size - 1) / p.block_size;
    blocks += 3;
    std::vector<int32_t> ids((size_t)blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng.engine());
    int32_t rows = 0;
    for (int32_t ctx : contexts) {
      PooledSeq s{ctx, {}};
      for (int32_t b = 0; b < (ctx + p.block_size - 1) / p.block_size; ++b) {
        s.blocks.push_back(ids.back());
        ids.pop_back();
      }
      REQUIRE((int32_t)s.blocks.size() <= max_blocks);
      seqs.push_back(s);
      q_base.push_back(rows);
      rows += ctx;
    }
    const int64_t width = (int64_t)p.n_kv_heads * p.head_dim;
    slots = (int64_t)blocks * p.block_size;
    k_pool = rng.floats((size_t)(slots * width), -2.0f, 2.0f);
    v_pool = rng.floats((size_t)(slots * width));
    q_table = rng.floats((size_t)rows * p.n_heads * p.head_dim, -2.0f, 2.0f);
  }

  int64_t q_width() const { return (int64_t)p.n_heads * p.head_dim; }

  OpCase base_case(Mode mode) const {
    const TensorDesc pool = TensorDesc::contiguous(kv, Shape{slots, (int64_t)p.n_kv_heads * p.head_dim});
    OpCase c{OpKind::paged_attention, p,
             {weight_input(DType::f32, Shape{(int64_t)q_table.size() / q_width(), q_width()}, as_bytes(q_table)),
              step(StepField::token_ids), {OpInput::pool, pool, kv_pool_bytes(k_pool, kv), StepField::none},
              {OpInput::pool, pool, kv_pool_bytes(v_pool, kv), StepField::none}, step(StepField::positions), step(StepField::query_start),
              step(StepField::seq_lens), step(StepField::block_tables)}};
    c.tile.batch_invariant = mode == Mode::batch_invariant;
    return c;
  }

  // The step's arrays in c (causal: each query sees positions up to its own).
  void fill_step(OpCase& c, const std::vector<StepSeq>& step) const {
    c.token_ids.clear();
    c.positions.clear();
    c.query_start = {0};
    c.seq_lens.clear();
    c.block_tables.clear();
    for (const StepSeq& s : step) {
      for (int32_t j = s.first; j < s.first + s.count; ++j) {
        c.token_ids.push_back(q_base[(size_t)s.seq] + j);
        c.positions.push_back(j);
      }
      c.query_start.push_back((int32_t)c.token_ids.size());
      c.seq_lens.push_back(s.first + s.count);
      const auto& blocks = seqs[(size_t)s.seq].blocks;
      for (int32_t b = 0; b < max_blocks; ++b) c.block_tables.push_back(b < (int32_t)blocks.size() ? blocks[(size_t)b] : 0);
    }
    c.n_tokens = (int32_t)c.token_ids.size();
    c.slot_mapping.assign(c.token_ids.size(), 0);
  }
};

}  // namespace

TEST_CASE("a token's attention bits are the same as a decode and as a row of a prompt chunk, beside other sequences, on every device, for f32, f16 and bf16 KV") {
  Rng rng(302);
  for (DType kv : {DType::f32, DType::f16, DType::bf16}) {
  CAPTURE(name(kv));
  // Sequence 0 is the one watched: its queries at positions [250, 290) cross
  // the 256-position boundary of the 128-position context pieces. The others
  // are long and short decodes and chunks that share its steps.
  const int kWatched = 0;
  const int32_t first = 250, count = 40;
  const AttentionWorld w(AttentionParams{8, 2, 32, 16, 0.0f, true}, {290, 700, 50, 40, 130, 300, 20, 9, 77}, rng, kv);
  struct Arrangement {
    std::string what;
    ShapeBucket bucket;
    // The step holding watched tokens [t, t + n), n the arrangement's chunk.
    int32_t chunk;
    std::vector<StepSeq> before, after;
  };
  const std::vector<Arrangement> arrangements = {
      {"decode alone in a bucket of one", {1, 1, 1, 48}, 1, {}, {}},
      {"decode beside a long decode and a chunk", {16, 4, 16, 48}, 1, {{1, 699, 1}}, {{2, 41, 9}}},
      {"decode beside six decodes and a chunk", {32, 8, 32, 48}, 1,
       {{1, 699, 1}, {3, 39, 1}, {5, 299, 1}}, {{6, 19, 1}, {7, 8, 1}, {8, 76, 1}, {4, 127, 3}}},
      {"chunks of 7 beside a decode", {16, 2, 16, 48}, 7, {{1, 699, 1}}, {}},
      {"one chunk of 40 between a decode and a chunk", {64, 4, 64, 48}, 40, {{1, 699, 1}}, {{2, 41, 9}}},
      {"one chunk of 40 alone in a large bucket", {128, 8, 128, 48}, 40, {}, {}},
  };
  auto& devices = devices_under_test();
  REQUIRE(!devices.empty());
  for (auto& d : devices) {
    CAPTURE(d.label);
    const std::string backend = backend_of(d.label);
    for (Mode mode : {Mode::default_kernels, Mode::batch_invariant}) {
      if (mode == Mode::default_kernels && !attention_invariant_by_default(backend)) continue;
      const std::string mode_name = to_string(mode);
      CAPTURE(mode_name);
      per_isa(backend, [&] {
        const size_t width = (size_t)w.q_width();
        std::vector<std::vector<float>> rows;  // the watched tokens' outputs in the first arrangement
        for (const Arrangement& a : arrangements) {
          CAPTURE(a.what);
          OpCase c = w.base_case(mode);
          c.bucket = a.bucket;
          CompiledOp op = compile_on_token_rows(*d.device, c);
          for (int32_t t = first; t < first + count; t += a.chunk) {
            const int32_t n = std::min(a.chunk, first + count - t);
            std::vector<StepSeq> step = a.before;
            step.push_back({kWatched, t, n});
            step.insert(step.end(), a.after.begin(), a.after.end());
            w.fill_step(c, step);
            const std::vector<float> out = run_on_token_rows(op, c);
            int32_t at = 0;  // the watched sequence's first row in the step
            for (const StepSeq& s : a.before) at += s.count;
            for (int32_t i = 0; i < n; ++i) {
              const float* got = out.data() + (size_t)(at + i) * width;
              if (rows.size() < (size_t)count) {
                rows.emplace_back(got, got + width);
                continue;
              }
              CAPTURE(t + i);
              const std::vector<float>& want = rows[(size_t)(t + i - first)];
              CHECK_MESSAGE(same_bits(got, want.data(), width), "max |difference| " << max_diff(got, want.data(), width));
            }
          }
        }
      });
    }
  }
  }
}
