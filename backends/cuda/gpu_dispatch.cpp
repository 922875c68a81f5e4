// One dispatch of a plan to its kernels (kernels/cuda/launch.h), with the
// step's row counts: the same binding of inputs and outputs to kernel
// arguments as the CPU backend's (backends/cpu/cpu_executable.cpp).
#include <variant>

#include "backends/cuda/gpu_executable.h"
#include "backends/cuda/gpu_status.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu {

namespace {

namespace k = tessera::gpu::kernels;

int64_t rows_of(const BoundTensor& t, const StepArgs& a) {
  switch (t.rows) {
    case RowCount::fixed: return t.desc.shape[0];
    case RowCount::tokens: return a.n_tokens;
    case RowCount::logit_rows: return a.n_logit_rows;
  }
  return 0;
}

float* f32(const BoundTensor& t) { return reinterpret_cast<float*>(t.data); }
int32_t* i32(const BoundTensor& t) { return reinterpret_cast<int32_t*>(t.data); }

// x = in[0], w = in[1], y = out[0]: how every matmul-rooted dispatch binds its matmul.
kernels::MatmulArgs matmul_args(const BoundDispatch& d, int64_t rows) {
  kernels::MatmulArgs m;
  m.x = f32(d.in[0]);
  m.w = d.in[1].data;
  m.w_dtype = d.in[1].desc.dtype;
  m.y = f32(d.out[0]);
  m.m = rows;
  m.n = d.in[1].desc.shape[0];
  m.k = d.in[1].desc.shape[1];
  return m;
}

// The launch's error, named after the dispatch.
Status launched(gpuError_t e, const BoundDispatch& d) {
  if (e == gpuSuccess) return Status::ok();
  return gpu_failed(("kernel launch for " + std::string(name(d.source->op)) + " (" + d.source->label + ")").c_str(), e);
}

}  // namespace

Status GpuExecutable::launch(const BoundDispatch& d, const StepArgs& a, gpuStream_t s) const {
  const int64_t rows = d.out.empty() ? 0 : rows_of(d.out[0], a);
  const OpParams& params = d.source->params;
  const int64_t width = d.in.empty() ? 0 : d.in[0].desc.shape.last();
  float* scratch = reinterpret_cast<float*>(scratch_->data());
  switch (d.source->op) {
    case OpKind::matmul: return launched(k::matmul(matmul_args(d, rows), s), d);
    case OpKind::matmul_add: return launched(k::matmul_add({matmul_args(d, rows), f32(d.in[2])}, s), d);
    case OpKind::matmul_add_rms_norm: {
      const kernels::MatmulArgs m = matmul_args(d, rows);
      TS_TRY(launched(k::matmul_add({m, f32(d.in[2])}, s), d));
      return launched(k::rms_norm({f32(d.out[0]), f32(d.in[3]), f32(d.out[1]), rows, m.n, std::get<RmsNormParams>(params)}, s), d);
    }
    case OpKind::matmul_silu_mul:
    case OpKind::matmul_qkv: {
      // The product [rows, n] goes to scratch; the second kernel splits or gates it into the outputs.
      kernels::MatmulArgs m = matmul_args(d, rows);
      m.y = scratch;
      TS_TRY(launched(k::matmul(m, s), d));
      if (d.source->op == OpKind::matmul_silu_mul) return launched(k::split_silu_mul(scratch, f32(d.out[0]), rows, m.n / 2, s), d);
      const auto& p = std::get<QkvSplitParams>(params);
      return launched(k::split_qkv(scratch, f32(d.out[0]), f32(d.out[1]), f32(d.out[2]), rows, p.q_rows, p.kv_rows, s), d);
    }
    case OpKind::matmul_epilogue: {
      // The product to scratch, then the program over it (register a0) and the node's other inputs.
      kernels::MatmulArgs m = matmul_args(d, rows);
      m.y = scratch;
      TS_TRY(launched(k::matmul(m, s), d));
      kernels::ElementwiseArgs e;
      e.program = &std::get<ElementwiseProgram>(params);
      e.inputs[0] = scratch;
      for (size_t i = 2; i < d.in.size(); ++i) e.inputs[i - 1] = f32(d.in[i]);
      e.out = f32(d.out[0]);
      e.rows = rows;
      e.cols = m.n;
      return launched(k::elementwise(e, s), d);
    }
    case OpKind::rope: {
      float* x = f32(d.out[0]);
      if (x != f32(d.in[0]) && rows > 0)
        TS_GPU_TRY(gpuMemcpyAsync(x, f32(d.in[0]), (size_t)(rows * width) * 4, gpuMemcpyDeviceToDevice, s));
      // The optional third input: a folded table [P, rot_dims/2, 2] or frequency factors [rot_dims/2].
      const bool factors = d.in.size() == 3 && d.in[2].desc.shape.rank == 1;
      const bool table = d.in.size() == 3 && !factors;
      return launched(k::rope({x, i32(d.in[1]), rows, std::get<RopeParams>(params), table ? f32(d.in[2]) : nullptr,
                               table ? d.in[2].desc.shape[0] : 0, factors ? f32(d.in[2]) : nullptr},
                              s),
                      d);
    }
    case OpKind::kv_append: {
      kernels::KvAppendArgs kv;
      kv.k = f32(d.in[0]);
      kv.v = f32(d.in[1]);
      kv.slot_mapping = i32(d.in[2]);
      kv.n_tokens = a.n_tokens;
      kv.k_pool = f32(d.in[3]);
      kv.v_pool = f32(d.in[4]);
      kv.num_slots = d.in[3].desc.shape[0];
      kv.p = std::get<KvCacheParams>(params);
      return launched(k::kv_append(kv, s), d);
    }
    case OpKind::rope_kv_append: {
      kernels::RopeKvAppendArgs r;
      r.q = f32(d.in[0]);
      r.q_out = f32(d.out[0]);
      r.k = f32(d.in[1]);
      r.v = f32(d.in[2]);
      r.k_rot = scratch;
      r.positions = i32(d.in[3]);
      r.slot_mapping = i32(d.in[4]);
      r.n_tokens = a.n_tokens;
      r.k_pool = f32(d.in[5]);
      r.v_pool = f32(d.in[6]);
      r.num_slots = d.in[5].desc.shape[0];
      r.p = std::get<RopeKvAppendParams>(params);
      if (d.in.size() == 8 && d.in[7].desc.shape.rank == 1) {
        r.freq_factors = f32(d.in[7]);
      } else if (d.in.size() == 8) {
        r.table = f32(d.in[7]);
        r.table_rows = d.in[7].desc.shape[0];
      }
      return launched(k::rope_kv_append(r, s), d);
    }
    case OpKind::paged_attention: {
      kernels::AttentionArgs at;
      at.q = f32(d.in[0]);
      at.out = f32(d.out[0]);
      at.n_tokens = a.n_tokens;
      at.k_pool = f32(d.in[1]);
      at.v_pool = f32(d.in[2]);
      at.positions = i32(d.in[3]);
      at.query_start = i32(d.in[4]);
      at.seq_lens = i32(d.in[5]);
      at.block_tables = i32(d.in[6]);
      at.n_seqs = a.n_seqs;
      at.max_blocks_per_seq = plan_.bucket.max_blocks_per_seq;
      at.p = std::get<AttentionParams>(params);
      return launched(k::paged_attention(at, s), d);
    }
    case OpKind::embedding:
      // Token ids were checked against the table by check_step_args (StepLimits::vocab).
      return launched(k::embedding({d.in[0].data, d.in[0].desc.dtype, d.in[0].desc.shape[0], d.in[0].desc.shape[1], i32(d.in[1]),
                                    rows, f32(d.out[0])},
                                   s),
                      d);
    case OpKind::rms_norm:
      return launched(k::rms_norm({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows, width, std::get<RmsNormParams>(params)}, s), d);
    case OpKind::head_rms_norm: {
      const int64_t head_dim = d.in[1].desc.shape[0];
      return launched(k::head_rms_norm({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows, width / head_dim, head_dim,
                                        std::get<RmsNormParams>(params)},
                                       s),
                      d);
    }
    case OpKind::add_rms_norm:
      return launched(k::add_rms_norm({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), f32(d.out[1]), f32(d.in[2]), rows, width,
                                       std::get<RmsNormParams>(params)},
                                      s),
                      d);
    case OpKind::add: return launched(k::add({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows * width}, s), d);
    case OpKind::mul: return launched(k::mul({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows * width}, s), d);
    case OpKind::silu_mul: return launched(k::silu_mul({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows * width}, s), d);
    case OpKind::gelu_mul: return launched(k::gelu_mul({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows * width}, s), d);
    case OpKind::silu: return launched(k::silu({f32(d.in[0]), f32(d.out[0]), rows * width}, s), d);
    case OpKind::gelu: return launched(k::gelu({f32(d.in[0]), f32(d.out[0]), rows * width}, s), d);
    case OpKind::scale:
      return launched(k::scale({f32(d.in[0]), f32(d.out[0]), rows * width, std::get<ScaleParams>(params).scale}, s), d);
    case OpKind::softcap:
      return launched(k::softcap({f32(d.in[0]), f32(d.out[0]), rows * width, std::get<SoftcapParams>(params).cap}, s), d);
    case OpKind::bias_add: return launched(k::bias_add({f32(d.in[0]), f32(d.in[1]), f32(d.out[0]), rows, width}, s), d);
    case OpKind::elementwise: {
      kernels::ElementwiseArgs e;
      e.program = &std::get<ElementwiseProgram>(params);
      for (size_t i = 0; i < d.in.size(); ++i) e.inputs[i] = f32(d.in[i]);
      e.out = f32(d.out[0]);
      // A 1-D output is one row; otherwise rows of its last dimension.
      const bool one_row = d.out[0].desc.shape.rank == 1;
      e.rows = one_row ? 1 : rows;
      e.cols = one_row ? rows : d.out[0].desc.shape.last();
      return launched(k::elementwise(e, s), d);
    }
    case OpKind::softmax: {
      float* x = f32(d.out[0]);
      if (x != f32(d.in[0]) && rows > 0)
        TS_GPU_TRY(gpuMemcpyAsync(x, f32(d.in[0]), (size_t)(rows * width) * 4, gpuMemcpyDeviceToDevice, s));
      return launched(k::softmax({x, rows, width}, s), d);
    }
    case OpKind::argmax: return launched(k::argmax({f32(d.in[0]), i32(d.out[0]), rows, width}, s), d);
    case OpKind::gather_rows: {
      kernels::GatherRowsArgs g;
      g.x = d.in[0].data;
      g.rows = i32(d.in[1]);
      g.out = d.out[0].data;
      g.n_rows = rows;
      g.n_src_rows = rows_of(d.in[0], a);
      g.row_bytes = (int64_t)d.in[0].desc.row_bytes();
      return launched(k::gather_rows(g, s), d);
    }
    case OpKind::copy:
      if (rows > 0)
        TS_GPU_TRY(gpuMemcpyAsync(d.out[0].data, d.in[0].data, (size_t)(rows * (int64_t)d.in[0].desc.row_bytes()),
                                  gpuMemcpyDeviceToDevice, s));
      return Status::ok();
    default: break;
  }
  return internal_error(std::string(TESSERA_GPU_BACKEND ": no launcher for ") + std::string(name(d.source->op)) + " (" +
                        d.source->label + ") although the kernel table accepted it");
}

}  // namespace tessera::gpu
