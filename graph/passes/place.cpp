// Placement: every node gets a device. A node runs on the target when the
// target's kernel table has it (and --place does not say otherwise), else
// on the fallback (the CPU), which must have it. The nodes that read or
// update one KV pool share a device: the pool lives in one device's memory,
// so if any of them cannot run on the target, all of them move. Then, where
// a value is read on a device other than the one that made it, a `copy`
// node placed on the reader's device is inserted just before its first
// reader there, and every reader on that device reads the copy. Under
// --strict a node off the target is an error naming it.
// A graph that is already placed is left as it is (the verifier checks it).
#include <map>
#include <string>

#include "graph/passes/passes.h"

namespace tessera::graph::passes {

namespace {

bool glob_match(const std::string& pattern, const std::string& text) {
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == text[t]) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

const PlacementOverride* override_for(const PassContext& ctx, const Node& n) {
  const PlacementOverride* hit = nullptr;  // the last matching item wins
  for (const PlacementOverride& o : ctx.placement_overrides)
    if (glob_match(o.pattern, std::string(name(n.op))) || (!n.label.empty() && glob_match(o.pattern, n.label))) hit = &o;
  return hit;
}

std::string describe(const Graph& g, const Node& n) {
  const OpQuery q = query_for(g, n);
  return (n.label.empty() ? std::string(name(n.op)) : n.label) + " (" + std::string(name(n.op)) + ", " +
         std::string(name(q.weight_dtype)) + ")";
}

KernelChoice ask(const KernelTable* table, const Graph& g, const Node& n) {
  if (!table) return {true, "", ""};
  return table->query(query_for(g, n));
}

// The KV pool a value's storage is, or kNoValue.
ValueId pool_of(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.kind == ValueKind::kv_pool) return v;
  return val.aliases != kNoValue ? val.aliases : kNoValue;
}

}  // namespace

Status place(Graph& g, const PassContext& ctx) {
  size_t placed = 0;
  for (const Node& n : g.nodes) placed += n.device.empty() ? 0 : 1;
  if (placed == g.nodes.size() && placed > 0) return Status::ok();
  if (placed != 0) return invalid_argument("place: some nodes are placed and some are not; place all or none");
  for (const PlacementOverride& o : ctx.placement_overrides)
    if (o.device != ctx.target && o.device != ctx.fallback_target)
      return invalid_argument("--place: device '" + o.device + "' for '" + o.pattern + "'; expected " + ctx.target +
                              (ctx.target == ctx.fallback_target ? "" : " or " + ctx.fallback_target));

  // 1. Each node where its kernels are, or where --place puts it.
  std::vector<std::string> device(g.nodes.size());
  auto fallback = [&](size_t i, const std::string& why) -> Status {
    const Node& n = g.nodes[i];
    if (ctx.strict) return unsupported("--strict: " + ctx.target + " cannot run " + describe(g, n) + ": " + why);
    const KernelChoice k = ask(ctx.fallback_kernels, g, n);
    if (!k.supported)
      return unsupported("place: neither " + ctx.target + " nor " + ctx.fallback_target + " can run " + describe(g, n) + ": " + k.reason);
    device[i] = ctx.fallback_target;
    return Status::ok();
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (const PlacementOverride* o = override_for(ctx, n)) {
      if (ctx.strict && o->device != ctx.target)
        return unsupported("--strict: --place puts " + describe(g, n) + " on " + o->device + ", off " + ctx.target);
      const KernelChoice k = ask(o->device == ctx.target ? ctx.kernels : ctx.fallback_kernels, g, n);
      if (!k.supported) return unsupported("--place: " + o->device + " cannot run " + describe(g, n) + ": " + k.reason);
      device[i] = o->device;
      continue;
    }
    const KernelChoice k = ask(ctx.kernels, g, n);
    if (k.supported) device[i] = ctx.target;
    else TS_TRY(fallback(i, k.reason));
  }

  // 2. One device per KV pool: if its users disagree, all of them go to the fallback.
  std::map<ValueId, std::vector<size_t>> pool_users;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId in : g.nodes[i].inputs)
      if (const ValueId p = pool_of(g, in); p != kNoValue) pool_users[p].push_back(i);
  for (const auto& [pool, users] : pool_users) {
    bool same = true;
    for (size_t u : users) same = same && device[u] == device[users[0]];
    if (same) continue;
    for (size_t u : users)
      if (device[u] != ctx.fallback_target)
        TS_TRY(fallback(u, "it shares the KV pool '" + g.value(pool).name + "' with a node on " + ctx.fallback_target));
  }

  // 3. Copies where a value crosses to another device.
  std::map<std::pair<ValueId, std::string>, ValueId> copy_of;  // (value, device) -> its copy there
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node n = std::move(g.nodes[i]);
    n.device = device[i];
    for (ValueId& in : n.inputs) {
      const Value& v = g.value(in);
      if (v.kind != ValueKind::computed || v.aliases != kNoValue) continue;  // bound where it is read, or a pool
      const std::string& made_on = nodes[(size_t)v.producer].device;
      if (made_on == n.device) continue;
      auto [it, fresh] = copy_of.try_emplace({in, n.device}, kNoValue);
      if (fresh) {
        Value c = v;
        c.name.clear();
        c.producer = (int32_t)nodes.size();
        const std::string label = nodes[(size_t)v.producer].label;
        it->second = g.add_value(std::move(c));
        Node copy{OpKind::copy, NoParams{}, {in}, {it->second}, (label.empty() ? "%" + std::to_string(in) : label) + " to " + n.device};
        copy.device = n.device;
        nodes.push_back(std::move(copy));
      }
      in = it->second;
    }
    for (ValueId out : n.outputs) g.value(out).producer = (int32_t)nodes.size();
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  // The returned values stay where they were made; the runtime reads them there.
  return Status::ok();
}

}  // namespace tessera::graph::passes

namespace tessera::graph {

std::string why_placed(const Graph& g, const Node& n, const PassContext& ctx) {
  using namespace passes;
  const std::string what = describe(g, n);
  if (n.op == OpKind::copy || n.device == ctx.target) return "";
  if (override_for(ctx, n)) return "--place puts " + what + " on " + n.device;
  const KernelChoice k = ask(ctx.kernels, g, n);
  if (!k.supported) return ctx.target + " cannot run " + what + ": " + k.reason + "; it runs on " + n.device;
  for (ValueId in : n.inputs)
    if (const ValueId p = pool_of(g, in); p != kNoValue)
      return what + " runs on " + n.device + ": it shares the KV pool '" + g.value(p).name + "' with a node there";
  return what + " runs on " + n.device;
}

Expected<std::vector<PlacementOverride>> parse_placement_overrides(const std::string& spec, const std::string& flag) {
  std::vector<PlacementOverride> out;
  size_t start = 0;
  while (!spec.empty() && start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    start = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return invalid_argument(flag + ": '" + item + "'; expected PATTERN=DEVICE, PATTERN an op name or node label ('*' matches any run of characters), e.g. paged_attention=cpu or blk.3.*=cpu");
    out.push_back({item.substr(0, eq), item.substr(eq + 1)});
  }
  return out;
}

}  // namespace tessera::graph
