#include "graph/printer.h"

#include <charconv>
#include <sstream>

namespace tessera::graph {

namespace {

// The shortest text that reads back as the same float, so a parsed graph
// computes exactly what the printed one did.
std::string fmt_float(float f) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  return std::string(buf, r.ptr);
}

std::string rope_fields(const RopeParams& p) {
  return "heads=" + std::to_string(p.n_heads) + ", head_dim=" + std::to_string(p.head_dim) +
         ", rot_dims=" + std::to_string(p.rot_dims) + ", theta=" + fmt_float(p.theta) +
         ", layout=" + (p.layout == RopeLayout::interleaved ? "interleaved" : "half_split") +
         (p.freq_scale != 1.0f ? ", freq_scale=" + fmt_float(p.freq_scale) : std::string());
}

std::string reg_name(const ElementwiseProgram& p, int r) {
  return r < p.n_inputs ? "a" + std::to_string(r) : "t" + std::to_string(r - p.n_inputs);
}

struct ParamPrinter {
  std::string operator()(const NoParams&) const { return ""; }
  std::string operator()(const RmsNormParams& p) const { return "{eps=" + fmt_float(p.eps) + "}"; }
  std::string operator()(const RopeParams& p) const { return "{" + rope_fields(p) + "}"; }
  std::string operator()(const KvCacheParams& p) const {
    return "{kv_heads=" + std::to_string(p.n_kv_heads) + ", head_dim=" + std::to_string(p.head_dim) +
           ", block_size=" + std::to_string(p.block_size) + "}";
  }
  std::string operator()(const AttentionParams& p) const {
    return "{heads=" + std::to_string(p.n_heads) + ", kv_heads=" + std::to_string(p.n_kv_heads) +
           ", head_dim=" + std::to_string(p.head_dim) + ", block_size=" + std::to_string(p.block_size) +
           ", scale=" + fmt_float(p.scale) + ", causal=" + (p.causal ? "true" : "false") +
           (p.window ? ", window=" + std::to_string(p.window) : std::string()) +
           (p.softcap != 0.0f ? ", softcap=" + fmt_float(p.softcap) : std::string()) + "}";
  }
  std::string operator()(const ScaleParams& p) const { return "{scale=" + fmt_float(p.scale) + "}"; }
  std::string operator()(const SoftcapParams& p) const { return "{cap=" + fmt_float(p.cap) + "}"; }
  std::string operator()(const PeerParams& p) const {
    return "{peer=" + std::to_string(p.peer) + (p.cols ? ", cols=" + std::to_string(p.cols) : std::string()) + "}";
  }
  std::string operator()(const AllGatherParams& p) const {
    return "{total=" + std::to_string(p.total) + ", world=" + std::to_string(p.world) + "}";
  }
  std::string operator()(const QkvSplitParams& p) const {
    return "{q_rows=" + std::to_string(p.q_rows) + ", kv_rows=" + std::to_string(p.kv_rows) + "}";
  }
  std::string operator()(const RopeKvAppendParams& p) const {
    return "{" + rope_fields(p.rope) + ", kv_heads=" + std::to_string(p.kv.n_kv_heads) +
           ", block_size=" + std::to_string(p.kv.block_size) + "}";
  }
  // {silu(a0); mul(t0, a1)}: one instruction after another, operands by register name.
  std::string operator()(const ElementwiseProgram& p) const {
    std::string s = "{";
    for (int i = 0; i < p.n_instrs; ++i) {
      const EwInstr& in = p.instrs[i];
      s += (i ? "; " : "") + std::string(name(in.op)) + "(" + reg_name(p, in.a);
      if (!is_unary(in.op)) s += ", " + reg_name(p, in.b);
      s += ")";
    }
    return s + "}";
  }
};

}  // namespace

std::string print_type(const Value& v) {
  std::string s = std::string(name(v.desc.dtype)) + "[";
  for (int i = 0; i < v.desc.shape.rank; ++i) {
    if (i) s += ", ";
    if (i == 0 && v.rows == RowCount::tokens) s += "T";
    else if (i == 0 && v.rows == RowCount::logit_rows) s += "R";
    else s += std::to_string(v.desc.shape[i]);
  }
  return s + "]";
}

std::string print_params(const OpParams& p) { return std::visit(ParamPrinter{}, p); }

std::string print_node(const Graph& g, const Node& n) {
  std::string s;
  for (size_t o = 0; o < n.outputs.size(); ++o) s += (o ? ", %" : "%") + std::to_string(n.outputs[o]);
  s += " = " + std::string(name(n.op)) + "(";
  for (size_t k = 0; k < n.inputs.size(); ++k) s += (k ? ", %" : "%") + std::to_string(n.inputs[k]);
  s += ")";
  const std::string params = print_params(n.params);
  if (!params.empty()) s += " " + params;
  if (!n.tile.empty()) {
    // Only the fields set: a CPU node shows its byte sizes, a Vulkan node its workgroup shapes.
    std::string fields;
    for (const TileField& f : tile_fields())
      if (n.tile.*f.member) fields += (fields.empty() ? "" : ", ") + std::string(f.name) + "=" + std::to_string(n.tile.*f.member);
    s += " tile{" + fields + "}";
  }
  s += " : ";
  for (size_t o = 0; o < n.outputs.size(); ++o) s += (o ? ", " : "") + print_type(g.value(n.outputs[o]));
  if (!n.device.empty()) s += " @" + n.device.to_string();
  if (!n.label.empty()) s += "  # " + n.label;
  return s;
}

std::string print(const Graph& g) {
  std::ostringstream os;
  os << "graph @" << g.name << " {\n";
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.kind == ValueKind::computed) continue;
    os << "  %" << i << " = " << to_string(v.kind) << " \"" << v.name << "\" : " << print_type(v);
    // Made once at load: packed from these weights' rows, in this order,
    // then reordered into the layout.
    std::vector<std::string> attrs;
    if (!v.packed_from.empty()) {
      std::string pack = "pack=concat_rows(";
      for (size_t k = 0; k < v.packed_from.size(); ++k) pack += (k ? ", \"" : "\"") + v.packed_from[k] + "\"";
      attrs.push_back(pack + ")");
    }
    if (v.layout != WeightLayout::rows) attrs.push_back("layout=" + std::string(name(v.layout)));
    if (v.shard) {
      const WeightShard& sh = *v.shard;
      std::string a = std::string("shard=") + (sh.axis == WeightShard::Axis::rows ? "rows " : "cols ") + std::to_string(sh.rank) +
                      "/" + std::to_string(sh.world);
      for (size_t k = 0; k < sh.parts.size(); ++k) a += (k ? "+" : " of ") + std::to_string(sh.parts[k]);
      if (!sh.source.empty()) a += " from \"" + sh.source + "\"";
      if (sh.widened) a += " widened";
      attrs.push_back(a);
    }
    for (size_t k = 0; k < attrs.size(); ++k) os << (k ? ", " : " {") << attrs[k];
    if (!attrs.empty()) os << "}";
    if (v.rope_table) {
      // What the constant's bytes are; made once at load (graph/constants.h).
      os << " {recipe=rope_table, rot_dims=" << v.rope_table->rot_dims << ", theta=" << fmt_float(v.rope_table->theta)
         << ", positions=" << v.rope_table->positions << "}";
    }
    os << "\n";
  }
  for (const Node& n : g.nodes) os << "  " << print_node(g, n) << "\n";
  os << "  return";
  for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", %" : " %") << g.outputs[i];
  os << "\n}\n";
  return os.str();
}

}  // namespace tessera::graph
