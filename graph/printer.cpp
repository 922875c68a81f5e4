#include "graph/printer.h"

#include <cstdio>
#include <sstream>

namespace tessera::graph {

namespace {

std::string fmt_float(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", (double)f);
  return buf;
}

std::string type_of(const Value& v) {
  std::string s = std::string(name(v.desc.dtype)) + "[";
  for (int i = 0; i < v.desc.shape.rank; ++i) {
    if (i) s += ", ";
    if (i == 0 && v.rows == RowCount::tokens) s += "T";
    else if (i == 0 && v.rows == RowCount::logit_rows) s += "R";
    else s += std::to_string(v.desc.shape[i]);
  }
  return s + "]";
}

struct ParamPrinter {
  std::string operator()(const NoParams&) const { return ""; }
  std::string operator()(const RmsNormParams& p) const { return "{eps=" + fmt_float(p.eps) + "}"; }
  std::string operator()(const RopeParams& p) const {
    return "{heads=" + std::to_string(p.n_heads) + ", head_dim=" + std::to_string(p.head_dim) +
           ", rot_dims=" + std::to_string(p.rot_dims) + ", theta=" + fmt_float(p.theta) +
           ", layout=" + (p.layout == RopeLayout::interleaved ? "interleaved" : "half_split") + "}";
  }
  std::string operator()(const KvCacheParams& p) const {
    return "{kv_heads=" + std::to_string(p.n_kv_heads) + ", head_dim=" + std::to_string(p.head_dim) +
           ", block_size=" + std::to_string(p.block_size) + "}";
  }
  std::string operator()(const AttentionParams& p) const {
    return "{heads=" + std::to_string(p.n_heads) + ", kv_heads=" + std::to_string(p.n_kv_heads) +
           ", head_dim=" + std::to_string(p.head_dim) + ", block_size=" + std::to_string(p.block_size) +
           ", scale=" + fmt_float(p.scale) + ", causal=" + (p.causal ? "true" : "false") + "}";
  }
};

}  // namespace

std::string print_params(const OpParams& p) { return std::visit(ParamPrinter{}, p); }

std::string print(const Graph& g) {
  std::ostringstream os;
  os << "graph @" << g.name << " {\n";
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.kind == ValueKind::computed) continue;
    os << "  %" << i << " = " << to_string(v.kind) << " \"" << v.name << "\" : " << type_of(v) << "\n";
  }
  for (const Node& n : g.nodes) {
    os << "  ";
    for (size_t o = 0; o < n.outputs.size(); ++o) os << (o ? ", %" : "%") << n.outputs[o];
    os << " = " << name(n.op) << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) os << (k ? ", %" : "%") << n.inputs[k];
    os << ")";
    const std::string params = print_params(n.params);
    if (!params.empty()) os << " " << params;
    os << " : ";
    for (size_t o = 0; o < n.outputs.size(); ++o) os << (o ? ", " : "") << type_of(g.value(n.outputs[o]));
    if (!n.label.empty()) os << "  # " << n.label;
    os << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", %" : " %") << g.outputs[i];
  os << "\n}\n";
  return os.str();
}

}  // namespace tessera::graph
