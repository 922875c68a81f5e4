// One dispatch of a plan to its kernels (kernels/cuda/launch.h), with the
// step's row counts: the same binding of inputs and outputs to kernel
// arguments as the CPU backend's (backends/cpu/cpu_executable.cpp).
#include <variant>

#include "backends/cuda/gpu_executable.h"
#include "backends/cuda/gpu_nccl.h"
#include "backends/cuda/gpu_status.h"
#include "kernels/cuda/launch.h"

namespace tessera::gpu {

namespace {

namespace k = tessera::gpu::kernels;

const auto f32 = bound_f32;
const auto i32 = bound_i32;

// The launch's error, named after the dispatch.
Status launched(gpuError_t e, const BoundDispatch& d) {
  if (e == gpuSuccess) return Status::ok();
  return gpu_failed(("kernel launch for " + std::string(name(d.op)) + " (" + d.source->label + ")").c_str(), e);
}

}  // namespace

Status GpuExecutable::launch(const BoundDispatch& d, const StepArgs& a, gpuStream_t s) const {
  const int64_t rows = d.out.empty() ? 0 : rows_of(d.out[0], a);
  const OpParams& params = d.params;
  const int64_t width = d.in.empty() ? 0 : d.in[0].desc.shape.last();
  float* scratch = reinterpret_cast<float*>(scratch_->data());
  switch (d.op) {
    case OpKind::matmul: return launched(k::matmul(bound_matmul_args(d, rows), s), d);
    case OpKind::matmul_add: return launched(k::matmul_add({bound_matmul_args(d, rows), f32(d.in[2])}, s), d);
    case OpKind::matmul_add_rms_norm: {
      const kernels::MatmulArgs m = bound_matmul_args(d, rows);
      TS_TRY(launched(k::matmul_add({m, f32(d.in[2])}, s), d));
      return launched(k::rms_norm({f32(d.out[0]), f32(d.in[3]), f32(d.out[1]), rows, m.n, std::get<RmsNormParams>(params)}, s), d);
    }
    case OpKind::matmul_silu_mul:
    case OpKind::matmul_qkv: {
      // The product [rows, n] goes to scratch; the second kernel splits or gates it into the outputs.
      kernels::MatmulArgs m = bound_matmul_args(d, rows);
      m.y = scratch;
      TS_TRY(launched(k::matmul(m, s), d));
      if (d.op == OpKind::matmul_silu_mul) return launched(k::split_silu_mul(scratch, f32(d.out[0]), rows, m.n / 2, s), d);
      const auto& p = std::get<QkvSplitParams>(params);
      return launched(k::split_qkv(scratch, f32(d.out[0]), f32(d.out[1]), f32(d.out[2]), rows, p.q_rows, p.kv_rows, s), d);
    }
    case OpKind::matmul_epilogue: {
      // The product to scratch, then the program over it (register a0) and the node's other inputs.
      kernels::MatmulArgs m = bound_matmul_args(d, rows);
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
      return launched(k::rope(bound_rope_args(d, rows), s), d);
    }
    case OpKind::kv_append: return launched(k::kv_append(bound_kv_append_args(d, a), s), d);
    case OpKind::rope_kv_append: {
      kernels::RopeKvAppendArgs r = bound_rope_kv_append_args(d, a);
      r.k_rot = scratch;
      return launched(k::rope_kv_append(r, s), d);
    }
    case OpKind::paged_attention: {
      kernels::AttentionArgs at = bound_attention_args(d, a, plan_.bucket.max_blocks_per_seq);
      at.workspace = scratch;  // paged_attention_workspace_bytes for the bucket (bind_dispatches)
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
    case OpKind::elementwise: return launched(k::elementwise(bound_elementwise_args(d, rows), s), d);
    case OpKind::softmax: {
      float* x = f32(d.out[0]);
      if (x != f32(d.in[0]) && rows > 0)
        TS_GPU_TRY(gpuMemcpyAsync(x, f32(d.in[0]), (size_t)(rows * width) * 4, gpuMemcpyDeviceToDevice, s));
      return launched(k::softmax({x, rows, width}, s), d);
    }
    case OpKind::argmax: return launched(k::argmax({f32(d.in[0]), i32(d.out[0]), rows, width}, s), d);
    case OpKind::gather_rows: return launched(k::gather_rows(bound_gather_rows_args(d, a, rows), s), d);
    // The communicator was checked at compile (bind_dispatches: the table says no without one).
    case OpKind::all_reduce:
      return comm_->all_reduce_sum_on(f32(d.in[0]), f32(d.out[0]), (size_t)(rows * width), DType::f32, s);
    case OpKind::all_gather: return all_gather(d, rows, s);
    case OpKind::copy:
      if (rows > 0)
        TS_GPU_TRY(gpuMemcpyAsync(d.out[0].data, d.in[0].data, (size_t)(rows * (int64_t)d.in[0].desc.row_bytes()),
                                  gpuMemcpyDeviceToDevice, s));
      return Status::ok();
    default: break;
  }
  return internal_error(std::string(TESSERA_GPU_BACKEND ": no launcher for ") + std::string(name(d.op)) + " (" +
                        d.source->label + ") although the kernel table accepted it");
}

// Rank r's block of `rows` x C_r values lands at rows * begin_r in gathered_
// (the earlier ranks' blocks hold that many); one strided copy per rank puts
// its columns [begin_r, end_r) into every row of the output.
Status GpuExecutable::all_gather(const BoundDispatch& d, int64_t rows, gpuStream_t s) const {
  const auto& p = std::get<AllGatherParams>(d.params);
  for (int r = 0; r < p.world; ++r) gather_counts_[(size_t)r] = (size_t)(rows * shard_range(p.total, p.world, r).size());
  float* staged = gathered_ ? reinterpret_cast<float*>(gathered_->data()) : nullptr;  // null: the bucket has no rows
  TS_TRY(comm_->all_gather_on(f32(d.in[0]), staged, gather_counts_, DType::f32, s));
  float* y = f32(d.out[0]);
  for (int r = 0; r < p.world && rows > 0; ++r) {
    const ShardRange part = shard_range(p.total, p.world, r);
    if (part.size() == 0) continue;
    const size_t width_bytes = (size_t)part.size() * 4;
    TS_GPU_TRY(gpuMemcpy2DAsync(y + part.begin, (size_t)p.total * 4, staged + rows * part.begin, width_bytes, width_bytes,
                                (size_t)rows, gpuMemcpyDeviceToDevice, s));
  }
  return Status::ok();
}

}  // namespace tessera::gpu
