// Placement: every node gets a device (backend:index). A node runs on the
// target when the target's kernel table has it, else on the fallback (the
// CPU), which must have it; --place pins nodes to any device the caller
// listed (the target, the fallback, or another such as a second GPU of the
// target's backend), whose kernel table must have them. The nodes that read
// or update one KV pool share a device: the pool lives in one device's
// memory, so if they disagree, all of them go where --place pinned some of
// them, or else (a node the target cannot run) to the fallback. Then, where
// a value is read on a device other than the one that made it, a `copy`
// node placed on the reader's device is inserted just before its first
// reader there, and every reader on that device reads the copy. Under
// --strict a node the target cannot run, or --place onto another backend,
// is an error naming it.
// A graph that is already placed is left as it is (the verifier checks it).
#include <map>
#include <optional>
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
    if (!ctx.find_device(o.device))
      return invalid_argument("--place: device '" + o.device.to_string() + "' for '" + o.pattern + "'; expected one of " +
                              ctx.known_devices());

  // 1. Each node where its kernels are, or where --place puts it.
  std::vector<DeviceId> device(g.nodes.size());
  std::vector<bool> pinned(g.nodes.size(), false);
  auto fallback = [&](size_t i, const std::string& why) -> Status {
    const Node& n = g.nodes[i];
    if (ctx.strict) return unsupported("--strict: " + ctx.target.to_string() + " cannot run " + describe(g, n) + ": " + why);
    const KernelChoice k = ask(ctx.fallback_kernels, g, n);
    if (!k.supported)
      return unsupported("place: neither " + ctx.target.to_string() + " nor " + ctx.fallback_target.to_string() + " can run " +
                         describe(g, n) + ": " + k.reason);
    device[i] = ctx.fallback_target;
    return Status::ok();
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (const PlacementOverride* o = override_for(ctx, n)) {
      // --strict keeps the model on the target's backend; another device of that backend is still the backend asked for.
      if (ctx.strict && o->device.backend != ctx.target.backend)
        return unsupported("--strict: --place puts " + describe(g, n) + " on " + o->device.to_string() + ", off " +
                           ctx.target.backend);
      const KernelChoice k = ask(ctx.find_device(o->device)->kernels, g, n);
      if (!k.supported) return unsupported("--place: " + o->device.to_string() + " cannot run " + describe(g, n) + ": " + k.reason);
      device[i] = o->device;
      pinned[i] = true;
      continue;
    }
    const KernelChoice k = ask(ctx.kernels, g, n);
    if (k.supported) device[i] = ctx.target;
    else TS_TRY(fallback(i, k.reason));
  }

  // 2. One device per KV pool. If its users disagree, they all go where
  // --place pinned some of them (when the pins agree and that device runs
  // every user), else to the fallback.
  std::map<ValueId, std::vector<size_t>> pool_users;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId in : g.nodes[i].inputs)
      if (const ValueId p = pool_of(g, in); p != kNoValue) pool_users[p].push_back(i);
  for (const auto& [pool, users] : pool_users) {
    bool same = true;
    for (size_t u : users) same = same && device[u] == device[users[0]];
    if (same) continue;
    std::optional<DeviceId> pin;
    bool pins_agree = true;
    for (size_t u : users)
      if (pinned[u]) {
        if (pin && *pin != device[u]) pins_agree = false;
        pin = device[u];
      }
    if (pin && pins_agree) {
      const KernelTable* kernels = ctx.find_device(*pin)->kernels;
      bool runs_all = true;
      for (size_t u : users) runs_all = runs_all && ask(kernels, g, g.nodes[u]).supported;
      if (runs_all) {
        for (size_t u : users) device[u] = *pin;
        continue;
      }
    }
    for (size_t u : users)
      if (device[u] != ctx.fallback_target)
        TS_TRY(fallback(u, "it shares the KV pool '" + g.value(pool).name + "' with a node on " + ctx.fallback_target.to_string()));
  }

  // 3. Copies where a value crosses to another device (two devices of one backend included).
  std::map<std::pair<ValueId, DeviceId>, ValueId> copy_of;  // (value, device) -> its copy there
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node n = std::move(g.nodes[i]);
    n.device = device[i];
    for (ValueId& in : n.inputs) {
      const Value& v = g.value(in);
      if (v.kind != ValueKind::computed || v.aliases != kNoValue) continue;  // bound where it is read, or a pool
      const DeviceId& made_on = nodes[(size_t)v.producer].device;
      if (made_on == n.device) continue;
      auto [it, fresh] = copy_of.try_emplace({in, n.device}, kNoValue);
      if (fresh) {
        Value c = v;
        c.name.clear();
        c.producer = (int32_t)nodes.size();
        const std::string label = nodes[(size_t)v.producer].label;
        it->second = g.add_value(std::move(c));
        Node copy{OpKind::copy, NoParams{}, {in}, {it->second},
                  (label.empty() ? "%" + std::to_string(in) : label) + " to " + n.device.to_string()};
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
  const std::string on = n.device.to_string();
  if (n.op == OpKind::copy || n.device == ctx.target) return "";
  if (override_for(ctx, n)) return "--place puts " + what + " on " + on;
  const KernelChoice k = ask(ctx.kernels, g, n);
  if (!k.supported) return ctx.target.to_string() + " cannot run " + what + ": " + k.reason + "; it runs on " + on;
  for (ValueId in : n.inputs)
    if (const ValueId p = pool_of(g, in); p != kNoValue)
      return what + " runs on " + on + ": it shares the KV pool '" + g.value(p).name + "' with a node there";
  return what + " runs on " + on;
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
      return invalid_argument(flag + ": '" + item + "'; expected PATTERN=DEVICE, PATTERN an op name or node label ('*' matches any run of characters), e.g. paged_attention=cpu or blk.3.*=vulkan:1");
    TS_ASSIGN_OR_RETURN(DeviceId device, parse_device_id(item.substr(eq + 1), flag + " item '" + item + "': DEVICE"));
    out.push_back({item.substr(0, eq), std::move(device)});
  }
  return out;
}

}  // namespace tessera::graph
