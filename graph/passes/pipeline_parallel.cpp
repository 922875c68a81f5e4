// Pipeline parallelism: rank s of N keeps a contiguous range of the layers
// (shard_range of them: earlier stages never hold more). The first stage
// also keeps what comes before the layers (the embedding), the last what
// comes after (the final norm and the classifier). Where the residual
// stream enters a stage it is received from the stage before (recv); where
// it leaves, it is sent to the next (send); the last stage sends the logits
// to rank 0, which samples. The KV pools of other stages' layers drop out
// with their nodes, so a rank holds its layers' weights and KV only.
//
// A node's layer is read from its label ("blk.L."), as the graph builder
// writes them for every architecture. Runs on the builder's graph, before
// the fusions; its send is each stage's one output.
#include <string>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite_util.h"

namespace tessera::graph::passes {

namespace {

// The layer a label names ("blk.12.attn_q" -> 12), or -1.
int layer_of(const std::string& label) {
  if (label.rfind("blk.", 0) != 0) return -1;
  const size_t dot = label.find('.', 4);
  if (dot == std::string::npos || dot == 4) return -1;
  int l = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (label[i] < '0' || label[i] > '9') return -1;
    l = l * 10 + (label[i] - '0');
  }
  return l;
}

}  // namespace

Status pipeline_parallel(Graph& g, const PassContext& ctx) {
  const int32_t n = ctx.pp_size, stage = ctx.pp_rank;
  if (n <= 1) return Status::ok();
  const std::string who = "--pipeline-parallel " + std::to_string(n) + " (rank " + std::to_string(stage) + ")";
  if (stage < 0 || stage >= n) return invalid_argument(who + ": the rank is outside 0.." + std::to_string(n - 1));
  int32_t layers = 0;
  for (const Node& node : g.nodes) {
    if (is_matmul_family(node.op) && node.op != OpKind::matmul && node.op != OpKind::matmul_qkv && node.op != OpKind::matmul_silu_mul)
      return invalid_argument("pipeline_parallel: runs on the builder's graph, before the fusions; met " + std::string(name(node.op)));
    if (node.op == OpKind::send || node.op == OpKind::recv)
      return invalid_argument("pipeline_parallel: the graph is split already (" + node.label + ")");
    layers = std::max(layers, layer_of(node.label) + 1);
  }
  if (layers < n)
    return invalid_argument(who + ": the model has " + std::to_string(layers) + " layers, fewer than the stages");
  const ShardRange mine = shard_range(layers, n, stage);
  const bool first = stage == 0, last = stage == n - 1;

  // Each node's place: before the layers, in one, or after them.
  std::vector<char> keep(g.nodes.size(), 0);
  bool seen_layer = false;
  ValueId positions = kNoValue;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    const int l = layer_of(node.label);
    if (l >= 0) seen_layer = true;
    if (l >= 0) keep[i] = l >= mine.begin && l < mine.end;
    else keep[i] = seen_layer ? last && node.op != OpKind::argmax : first;  // the leader picks greedy ids from the logits
    for (ValueId in : node.inputs)
      if (g.value(in).kind == ValueKind::step_input && g.value(in).field == StepField::positions) positions = in;
  }
  if (positions == kNoValue) return invalid_argument("pipeline_parallel: the graph reads no positions");

  // The residual stream where it enters (read by a kept node, made by one
  // that is not) and where it leaves (made by a kept node, read by one that is not).
  std::vector<int32_t> producer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId o : g.nodes[i].outputs) producer[(size_t)o] = (int32_t)i;
  ValueId entering = kNoValue, leaving = kNoValue;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId in : g.nodes[i].inputs) {
      const int32_t p = producer[(size_t)in];
      if (p < 0 || keep[(size_t)p] == keep[i]) continue;
      ValueId& end = keep[i] ? entering : leaving;
      if (end != kNoValue && end != in)
        return invalid_argument(who + ": the stage boundary at " + g.nodes[i].label + " crosses more than one value (" +
                                std::to_string(end) + " and " + std::to_string(in) + ")");
      end = in;
    }
  if (!first && entering == kNoValue) return invalid_argument(who + ": nothing enters the stage");
  if (!last && leaving == kNoValue) return invalid_argument(who + ": nothing leaves the stage");

  std::vector<Node> nodes;
  if (!first) {
    Value in;
    in.desc = g.value(entering).desc;
    in.rows = g.value(entering).rows;
    const ValueId received = g.add_value(std::move(in));
    nodes.push_back(Node{OpKind::recv, PeerParams{stage - 1, (int32_t)g.value(entering).desc.shape.last()}, {positions}, {received},
                         "stage" + std::to_string(stage) + ".recv", {}, {}});
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (keep[i])
        for (ValueId& v : g.nodes[i].inputs)
          if (v == entering) v = received;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (keep[i]) nodes.push_back(std::move(g.nodes[i]));
  // The last stage hands its logits to rank 0; the others their residual stream to the next stage.
  const ValueId sent_value = last ? g.outputs.at(0) : leaving;
  Value out;
  out.desc = g.value(sent_value).desc;
  out.rows = g.value(sent_value).rows;
  const ValueId sent = g.add_value(std::move(out));
  nodes.push_back(Node{OpKind::send, PeerParams{last ? 0 : stage + 1, 0}, {sent_value}, {sent},
                       "stage" + std::to_string(stage) + ".send", {}, {}});
  g.nodes = std::move(nodes);
  g.outputs = {sent};
  for (Value& v : g.values) v.producer = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId o : g.nodes[i].outputs) g.value(o).producer = (int32_t)i;
  compact_values(g);
  return shape_inference(g, ctx);
}

}  // namespace tessera::graph::passes
