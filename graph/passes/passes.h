#pragma once
// Every pass, one per file in this folder. Each takes the graph and the
// target's context, rewrites the graph in place and leaves it valid.
#include "graph/pass_manager.h"

namespace tessera::graph::passes {

Status shape_inference(Graph& g, const PassContext& ctx);
Status tensor_parallel(Graph& g, const PassContext& ctx);
Status pipeline_parallel(Graph& g, const PassContext& ctx);
Status dead_code_elimination(Graph& g, const PassContext& ctx);
Status fuse_qkv(Graph& g, const PassContext& ctx);
Status fuse_gate_up(Graph& g, const PassContext& ctx);
Status fuse_matmul_residual(Graph& g, const PassContext& ctx);
Status fuse_rope_kv_append(Graph& g, const PassContext& ctx);
Status fuse_residual_norm(Graph& g, const PassContext& ctx);
Status fold_constants(Graph& g, const PassContext& ctx);
Status fuse_matmul_epilogue(Graph& g, const PassContext& ctx);
Status fuse_elementwise(Graph& g, const PassContext& ctx);
Status repack_weights(Graph& g, const PassContext& ctx);
Status tile(Graph& g, const PassContext& ctx);
Status place(Graph& g, const PassContext& ctx);

}  // namespace tessera::graph::passes
