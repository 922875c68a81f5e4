// Placement on small hand-written IR: which device each node gets, the
// copies inserted where values cross, the KV-pool rule, --place and
// --strict; the verifier's placement checks; and the cut of a placed graph
// into the parts each device runs.
#include <doctest/doctest.h>

#include "graph/parser.h"
#include "graph/partition.h"
#include "graph/pass_manager.h"
#include "graph/printer.h"
#include "graph/verifier.h"

using namespace tessera;
using namespace tessera::graph;

namespace {

// A target that lacks the ops it is told to.
class KernelsWithout : public KernelTable {
 public:
  explicit KernelsWithout(std::vector<OpKind> missing) : missing_(std::move(missing)) {}
  KernelChoice query(const OpQuery& q) const override {
    for (OpKind m : missing_)
      if (q.op == m) return {false, "", "no " + std::string(name(q.op)) + " here"};
    return {true, "k", ""};
  }

 private:
  std::vector<OpKind> missing_;
};

const char* const kLayer = R"(graph @layer {
  %0 = input "token_ids" : i32[T]
  %1 = input "positions" : i32[T]
  %2 = input "slot_mapping" : i32[T]
  %3 = input "query_start" : i32[2]
  %4 = input "seq_lens" : i32[1]
  %5 = input "block_tables" : i32[4]
  %6 = weight "emb" : f32[16, 16]
  %7 = weight "w" : f32[16, 16]
  %8 = kv_pool "k_cache" : f32[64, 16]
  %9 = kv_pool "v_cache" : f32[64, 16]
  %10 = embedding(%6, %0) : f32[T, 16]  # embd
  %11 = matmul(%10, %7) : f32[T, 16]  # proj
  %12, %13 = kv_append(%11, %11, %2, %8, %9) {kv_heads=2, head_dim=8, block_size=16} : f32[64, 16], f32[64, 16]  # kv
  %14 = paged_attention(%11, %12, %13, %1, %3, %4, %5) {heads=2, kv_heads=2, head_dim=8, block_size=16, scale=0.35355338, causal=true} : f32[T, 16]  # attn
  %15 = add(%14, %10) : f32[T, 16]  # residual
  %16 = silu_mul(%15, %11) : f32[T, 16]  # act
  return %16
}
)";

Graph parsed(const char* text) {
  auto g = parse(text, "test.ir");
  REQUIRE_MESSAGE(g.has_value(), g.status().message());
  return std::move(*g);
}

PassContext gpu_ctx(const KernelTable& gpu, const KernelTable& cpu) {
  PassContext ctx;
  ctx.target = {"gpu", 0};
  ctx.kernels = &gpu;
  ctx.fallback_target = {"cpu", 0};
  ctx.fallback_kernels = &cpu;
  return ctx;
}

}  // namespace

TEST_CASE("place: a node the target lacks runs on the cpu, with a copy each way, shown in the IR") {
  const KernelsWithout gpu({OpKind::silu_mul}), cpu({});
  Graph g = parsed(kLayer);
  REQUIRE(run_passes(g, "place", gpu_ctx(gpu, cpu)).is_ok());
  const std::string text = print(g);
  CHECK(text.find("%14 = paged_attention(%11, %12, %13, %1, %3, %4, %5)") != std::string::npos);
  CHECK(text.find(": f32[T, 16] @gpu:0  # residual") != std::string::npos);
  // Both inputs of the act node come over in a copy placed on the cpu, just before it.
  CHECK(text.find("%17 = copy(%15) : f32[T, 16] @cpu:0  # residual to cpu:0\n"
                  "  %18 = copy(%11) : f32[T, 16] @cpu:0  # proj to cpu:0\n"
                  "  %16 = silu_mul(%17, %18) : f32[T, 16] @cpu:0  # act\n") != std::string::npos);
  CHECK(verify(g).is_ok());
  // The printed placement reads back as it was.
  auto again = parse(text, "placed.ir");
  REQUIRE_MESSAGE(again.has_value(), again.status().message());
  CHECK(print(*again) == text);
  CHECK(verify(*again).is_ok());
}

TEST_CASE("place: the nodes of one KV pool share a device, so a missing attention kernel moves the append too") {
  const KernelsWithout gpu({OpKind::paged_attention}), cpu({});
  Graph g = parsed(kLayer);
  PassContext ctx = gpu_ctx(gpu, cpu);
  REQUIRE(run_passes(g, "place", ctx).is_ok());
  for (const Node& n : g.nodes) {
    if (n.label == "kv" || n.label == "attn") CHECK_MESSAGE(n.device.to_string() == "cpu:0", n.label);
    if (n.label == "proj" || n.label == "embd" || n.label == "residual") CHECK_MESSAGE(n.device.to_string() == "gpu:0", n.label);
  }
  CHECK(why_placed(g, g.nodes[3], ctx).find("shares the KV pool") != std::string::npos);
  // One copy of proj serves both cpu readers; attn's output goes back for the residual.
  size_t copies = 0;
  for (const Node& n : g.nodes) copies += n.op == OpKind::copy ? 1 : 0;
  CHECK(copies == 2);
  CHECK(verify(g).is_ok());
}

TEST_CASE("place: --place pins nodes by op or label glob, --strict and an unknown device are one-line errors") {
  const KernelsWithout gpu({}), cpu({});
  {
    Graph g = parsed(kLayer);
    PassContext ctx = gpu_ctx(gpu, cpu);
    auto o = parse_placement_overrides("re*=cpu,act=cpu");
    REQUIRE(o.has_value());
    ctx.placement_overrides = *o;
    REQUIRE(run_passes(g, "place", ctx).is_ok());
    for (const Node& n : g.nodes)
      if (n.label == "residual" || n.label == "act") CHECK(n.device.to_string() == "cpu:0");
    CHECK(why_placed(g, g.nodes.back(), ctx) == "--place puts act (silu_mul, f32) on cpu:0");
  }
  {
    const KernelsWithout lacking({OpKind::silu_mul});
    Graph g = parsed(kLayer);
    PassContext ctx = gpu_ctx(lacking, cpu);
    ctx.strict = true;
    const Status s = run_passes(g, "place", ctx);
    CHECK(s.message() == "pass place: --strict: gpu:0 cannot run act (silu_mul, f32): no silu_mul here");
  }
  {
    Graph g = parsed(kLayer);
    PassContext ctx = gpu_ctx(gpu, cpu);
    ctx.placement_overrides = {{"act", {"tpu", 0}}};
    CHECK(run_passes(g, "place", ctx).message().find("--place: device 'tpu:0' for 'act'; expected one of gpu:0, cpu:0") != std::string::npos);
  }
  {
    const KernelsWithout neither({OpKind::silu_mul});
    Graph g = parsed(kLayer);
    CHECK(run_passes(g, "place", gpu_ctx(neither, neither)).message().find("neither gpu:0 nor cpu:0 can run act") != std::string::npos);
  }
  CHECK(parse_placement_overrides("attn").status().message().find("--place: 'attn'; expected PATTERN=DEVICE") == 0);
  CHECK(parse_placement_overrides("=cpu").status().message().find("expected PATTERN=DEVICE") != std::string::npos);
}

TEST_CASE("verify: a value read on another device without a copy, a pool on two devices, half a placement") {
  auto placed = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  std::string all_gpu = kLayer;
  for (const char* label : {"embd", "proj", "kv", "attn", "residual", "act"}) {
    const std::string tail = "  # " + std::string(label) + "\n";
    all_gpu = placed(all_gpu, tail, " @gpu:0" + tail);
  }
  CHECK(verify(parsed(all_gpu.c_str())).is_ok());

  const std::string cross = placed(all_gpu, " @gpu:0  # act", " @cpu:0  # act");
  CHECK(verify(parsed(cross.c_str())).message().find("act on cpu:0 reads %15, made on gpu:0, without a copy") != std::string::npos);

  const std::string pools = placed(all_gpu, " @gpu:0  # attn", " @cpu:0  # attn");
  CHECK(verify(parsed(pools.c_str())).message().find("uses KV pool 'k_cache', which another node uses on gpu:0") != std::string::npos);

  const std::string half = placed(all_gpu, " @gpu:0  # act", "  # act");
  CHECK(verify(parsed(half.c_str())).message().find("act has no device while other nodes do") != std::string::npos);

  CHECK(parse(placed(all_gpu, " @gpu:0  # act", " @  # act"), "t.ir").status().message().find("a device name after '@'") != std::string::npos);
}

TEST_CASE("partition: a placed graph is cut where the device changes, values crossing become transfers") {
  const KernelsWithout gpu({OpKind::silu_mul}), cpu({});
  Graph g = parsed(kLayer);
  REQUIRE(run_passes(g, "place", gpu_ctx(gpu, cpu)).is_ok());
  auto parts = partition_by_device(g);
  REQUIRE(parts.has_value());
  REQUIRE(parts->size() == 2);
  const GraphPart& a = (*parts)[0];
  const GraphPart& b = (*parts)[1];
  CHECK(a.device.to_string() == "gpu:0");
  CHECK(b.device.to_string() == "cpu:0");
  CHECK(a.inputs.empty());
  CHECK(!a.has_logits());
  CHECK(b.has_logits());
  // The cpu part reads proj and residual from the gpu part, which returns them.
  REQUIRE(b.inputs.size() == 2);
  for (const GraphPart::Input& in : b.inputs) {
    CHECK(in.src_part == 0);
    CHECK(b.graph.value(in.value).kind == ValueKind::transfer);
    CHECK(std::find(a.graph.outputs.begin(), a.graph.outputs.end(), in.src_value) != a.graph.outputs.end());
  }
  CHECK(a.graph.nodes.size() == 5);
  CHECK(b.graph.nodes.size() == 1);  // the copies are moved by the runtime, not run
  CHECK(verify(a.graph).is_ok());
  CHECK(verify(b.graph).is_ok());

  Graph whole = parsed(kLayer);
  auto one = partition_by_device(whole);
  REQUIRE(one.has_value());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].graph.nodes.size() == whole.nodes.size());
  CHECK((*one)[0].has_logits());
}

// Two devices of one backend: --place names gpu:1 beside the target gpu:0.
namespace {

PassContext two_gpu_ctx(const KernelTable& gpu0, const KernelTable& gpu1, const KernelTable& cpu, const std::string& place) {
  PassContext ctx = gpu_ctx(gpu0, cpu);
  ctx.other_devices.push_back({{"gpu", 1}, &gpu1, nullptr});
  auto o = parse_placement_overrides(place);
  REQUIRE_MESSAGE(o.has_value(), o.status().message());
  ctx.placement_overrides = *o;
  return ctx;
}

}  // namespace

TEST_CASE("place: --place puts nodes on a second device of the target's backend, with copies each way between gpu:0 and gpu:1") {
  const KernelsWithout gpu0({}), gpu1({}), cpu({});
  Graph g = parsed(kLayer);
  const PassContext ctx = two_gpu_ctx(gpu0, gpu1, cpu, "proj=gpu:1,residual=gpu:1");
  REQUIRE(run_passes(g, "place", ctx).is_ok());
  const std::string text = print(g);
  // proj reads embd from gpu:0; attention (gpu:0, with its pool) reads proj
  // back; residual on gpu:1 reads attention and embd (the copy already
  // there); act on gpu:0 reads residual and proj (the copy already there).
  const char* const kPlaced = R"(  %10 = embedding(%6, %0) : f32[T, 16] @gpu:0  # embd
  %17 = copy(%10) : f32[T, 16] @gpu:1  # embd to gpu:1
  %11 = matmul(%17, %7) : f32[T, 16] @gpu:1  # proj
  %18 = copy(%11) : f32[T, 16] @gpu:0  # proj to gpu:0
  %12, %13 = kv_append(%18, %18, %2, %8, %9) {kv_heads=2, head_dim=8, block_size=16} : f32[64, 16], f32[64, 16] @gpu:0  # kv
  %14 = paged_attention(%18, %12, %13, %1, %3, %4, %5) {heads=2, kv_heads=2, head_dim=8, block_size=16, scale=0.35355338, causal=true} : f32[T, 16] @gpu:0  # attn
  %19 = copy(%14) : f32[T, 16] @gpu:1  # attn to gpu:1
  %15 = add(%19, %17) : f32[T, 16] @gpu:1  # residual
  %20 = copy(%15) : f32[T, 16] @gpu:0  # residual to gpu:0
  %16 = silu_mul(%20, %18) : f32[T, 16] @gpu:0  # act
)";
  CHECK_MESSAGE(text.find(kPlaced) != std::string::npos, text);
  CHECK(verify(g).is_ok());
  CHECK(why_placed(g, g.nodes[2], ctx) == "--place puts proj (matmul, f32) on gpu:1");
  // @gpu:1 reads back as it was printed.
  auto again = parse(text, "two.ir");
  REQUIRE_MESSAGE(again.has_value(), again.status().message());
  CHECK(print(*again) == text);
  CHECK(verify(*again).is_ok());

  // The parts alternate between the two devices; each crossing is a transfer from the part before.
  auto parts = partition_by_device(g);
  REQUIRE(parts.has_value());
  std::string devices;
  for (const GraphPart& p : *parts) devices += p.device.to_string() + " ";
  CHECK(devices == "gpu:0 gpu:1 gpu:0 gpu:1 gpu:0 ");
  CHECK((*parts)[4].has_logits());
  for (size_t p = 1; p < parts->size(); ++p)
    for (const GraphPart::Input& in : (*parts)[p].inputs) CHECK((*parts)[(size_t)in.src_part].device != (*parts)[p].device);
}

TEST_CASE("place: a KV pool's users follow --place to the second device rather than the fallback") {
  const KernelsWithout gpu0({}), gpu1({}), cpu({});
  Graph g = parsed(kLayer);
  const PassContext ctx = two_gpu_ctx(gpu0, gpu1, cpu, "attn=gpu:1");
  REQUIRE(run_passes(g, "place", ctx).is_ok());
  for (const Node& n : g.nodes) {
    if (n.label == "kv" || n.label == "attn") CHECK_MESSAGE(n.device.to_string() == "gpu:1", n.label);
    if (n.label == "embd" || n.label == "proj" || n.label == "residual" || n.label == "act")
      CHECK_MESSAGE(n.device.to_string() == "gpu:0", n.label);
  }
  CHECK(verify(g).is_ok());
  // Pins that split a pool between two devices cannot both hold: the pool goes to the fallback.
  Graph split = parsed(kLayer);
  const PassContext ctx2 = two_gpu_ctx(gpu0, gpu1, cpu, "attn=gpu:1,kv=gpu:0");
  REQUIRE(run_passes(split, "place", ctx2).is_ok());
  for (const Node& n : split.nodes)
    if (n.label == "kv" || n.label == "attn") CHECK_MESSAGE(n.device.to_string() == "cpu:0", n.label);
  CHECK(verify(split).is_ok());
}

TEST_CASE("place: a device --place names must be listed and run the node, and --strict allows another device of the target's backend") {
  const KernelsWithout gpu0({}), gpu1({}), cpu({}), gpu1_lacking({OpKind::silu_mul});
  {
    Graph g = parsed(kLayer);
    CHECK(run_passes(g, "place", two_gpu_ctx(gpu0, gpu1, cpu, "act=gpu:2")).message() ==
          "pass place: --place: device 'gpu:2' for 'act'; expected one of gpu:0, cpu:0, gpu:1");
  }
  {
    Graph g = parsed(kLayer);
    CHECK(run_passes(g, "place", two_gpu_ctx(gpu0, gpu1_lacking, cpu, "act=gpu:1")).message() ==
          "pass place: --place: gpu:1 cannot run act (silu_mul, f32): no silu_mul here");
  }
  {
    Graph g = parsed(kLayer);
    PassContext ctx = two_gpu_ctx(gpu0, gpu1, cpu, "act=gpu:1");
    ctx.strict = true;
    REQUIRE(run_passes(g, "place", ctx).is_ok());
    CHECK(g.nodes.back().device.to_string() == "gpu:1");
  }
  {
    Graph g = parsed(kLayer);
    PassContext ctx = two_gpu_ctx(gpu0, gpu1, cpu, "act=cpu");
    ctx.strict = true;
    CHECK(run_passes(g, "place", ctx).message() == "pass place: --strict: --place puts act (silu_mul, f32) on cpu:0, off gpu");
  }
  auto two = parse_placement_overrides("blk.0.*=vulkan:1,blk.1.*=vulkan");
  REQUIRE(two.has_value());
  REQUIRE(two->size() == 2);
  CHECK((*two)[0].pattern == "blk.0.*");
  CHECK((*two)[0].device.to_string() == "vulkan:1");
  CHECK((*two)[1].device.to_string() == "vulkan:0");
  CHECK(parse_placement_overrides("act=vulkan:x").status().message() ==
        "--place item 'act=vulkan:x': DEVICE: 'vulkan:x' has no index after ':'; expected BACKEND or BACKEND:INDEX, e.g. vulkan:1 or cpu");
}

TEST_CASE("verify and parse: vulkan:0 and vulkan:1 are separate devices, and IR from before indices reads as device 0") {
  std::string on0 = kLayer;
  for (const char* label : {"embd", "proj", "kv", "attn", "residual", "act"}) {
    const std::string tail = "  # " + std::string(label) + "\n";
    on0.replace(on0.find(tail), tail.size(), " @vulkan:0" + tail);
  }
  CHECK(verify(parsed(on0.c_str())).is_ok());
  std::string cross = on0;
  cross.replace(cross.find(" @vulkan:0  # act"), 17, " @vulkan:1  # act");
  CHECK(verify(parsed(cross.c_str())).message() == "verify: act on vulkan:1 reads %15, made on vulkan:0, without a copy");
  std::string pools = on0;
  pools.replace(pools.find(" @vulkan:0  # attn"), 18, " @vulkan:1  # attn");
  CHECK(verify(parsed(pools.c_str())).message() ==
        "verify: attn on vulkan:1 uses KV pool 'k_cache', which another node uses on vulkan:0");

  // "@vulkan" (as IR was printed before devices had indices) is vulkan:0, printed with its index.
  std::string bare = on0;
  for (size_t at; (at = bare.find("@vulkan:0")) != std::string::npos;) bare.replace(at, 9, "@vulkan");
  const Graph old = parsed(bare.c_str());
  for (const Node& n : old.nodes) CHECK(n.device == DeviceId{"vulkan", 0});
  CHECK(print(old) == print(parsed(on0.c_str())));

  std::string bad = on0;
  bad.replace(bad.find("@vulkan:0  # act"), 9, "@vulkan:x");
  const std::string m = parse(bad, "bad.ir").status().message();
  CHECK(m.find("bad.ir:") == 0);
  CHECK(m.find("expected a device like @cpu:0 or @vulkan:1") != std::string::npos);
  CHECK(m.find('\n') == std::string::npos);
}
