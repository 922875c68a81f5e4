#include "graph/parser.h"

#include <charconv>
#include <map>
#include <optional>

namespace tessera::graph {

namespace {

std::optional<StepField> step_field_from_name(std::string_view n) {
  for (StepField f : {StepField::token_ids, StepField::positions, StepField::slot_mapping, StepField::query_start,
                      StepField::seq_lens, StepField::block_tables, StepField::logit_rows})
    if (n == to_string(f)) return f;
  return std::nullopt;
}

// A cursor over one line; every error names the source and line.
class Line {
 public:
  Line(std::string_view text, const std::string& source, int number) : s_(text), where_(source + ":" + std::to_string(number)) {}

  Status error(const std::string& what) const {
    return invalid_argument(where_ + ": expected " + what + " at column " + std::to_string(pos_ + 1) + " in '" +
                            std::string(s_) + "'");
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  bool accept_word(std::string_view w) {
    skip_space();
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  Status expect(char c) { return accept(c) ? Status::ok() : error(std::string("'") + c + "'"); }
  // Letters, digits, '_' and '.'.
  std::string word() {
    skip_space();
    const size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum((unsigned char)s_[pos_]) || s_[pos_] == '_' || s_[pos_] == '.' ||
                                s_[pos_] == '-' || s_[pos_] == '+'))
      ++pos_;
    return std::string(s_.substr(b, pos_ - b));
  }
  Expected<std::string> quoted() {
    skip_space();
    if (!accept('"')) return error("a quoted name");
    const size_t e = s_.find('"', pos_);
    if (e == std::string_view::npos) return error("a closing '\"'");
    std::string out(s_.substr(pos_, e - pos_));
    pos_ = e + 1;
    return out;
  }
  Expected<int64_t> integer(const std::string& what) {
    const std::string w = word();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (w.empty() || ec != std::errc() || p != w.data() + w.size()) return error(what + " (an integer)");
    return v;
  }
  Expected<ValueId> value_ref() {
    if (!accept('%')) return error("a value like %3");
    TS_ASSIGN_OR_RETURN(int64_t id, integer("a value number"));
    if (id < 0 || id > (1 << 30)) return error("a value number in range");
    return (ValueId)id;
  }
  // "f32[T, 64]" -> desc and rows. T and R stand for the symbolic rows; their
  // placeholder extent is 1, as the builder's.
  Status type(Value& v) {
    const std::string dt = word();
    auto d = dtype_from_name(dt);
    if (!d) return error("a dtype like f32 or q8_0, got '" + dt + "'");
    TS_TRY(expect('['));
    Shape s;
    v.rows = RowCount::fixed;
    while (!peek(']')) {
      if (s.rank == kMaxRank) return error("at most " + std::to_string(kMaxRank) + " dimensions");
      if (s.rank > 0) TS_TRY(expect(','));
      if (s.rank == 0 && accept_word("T")) {
        v.rows = RowCount::tokens;
        s.dims[(size_t)s.rank++] = 1;
      } else if (s.rank == 0 && accept_word("R")) {
        v.rows = RowCount::logit_rows;
        s.dims[(size_t)s.rank++] = 1;
      } else {
        TS_ASSIGN_OR_RETURN(int64_t n, integer("a dimension"));
        if (n < 0) return error("a dimension >= 0");
        s.dims[(size_t)s.rank++] = n;
      }
    }
    TS_TRY(expect(']'));
    v.desc = TensorDesc::contiguous(*d, s);
    return Status::ok();
  }
  // "{key=value, ...}": values are words (numbers, names) or calls like concat_rows("a", "b").
  Expected<std::map<std::string, std::string>> attributes() {
    std::map<std::string, std::string> out;
    if (!accept('{')) return out;
    while (!accept('}')) {
      if (!out.empty()) TS_TRY(expect(','));
      const std::string key = word();
      if (key.empty()) return error("an attribute name");
      if (out.count(key)) return error("attribute '" + key + "' once");
      TS_TRY(expect('='));
      std::string val = word();
      if (accept('(')) {
        // A call: its arguments are quoted names, kept joined by '\n'.
        val += "(";
        bool first = true;
        while (!accept(')')) {
          if (!first) TS_TRY(expect(','));
          TS_ASSIGN_OR_RETURN(std::string arg, quoted());
          val += (first ? "" : "\n") + arg;
          first = false;
        }
      }
      if (val.empty()) return error("a value for '" + key + "'");
      out[key] = val;
    }
    return out;
  }
  std::string rest() {
    skip_space();
    std::string r(s_.substr(pos_));
    pos_ = s_.size();
    return r;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  std::string where_;
};

// Turns a node's attributes into its op's parameter struct; every field must be there, no other.
class Fields {
 public:
  Fields(Line& l, std::map<std::string, std::string> m) : l_(l), m_(std::move(m)) {}
  Expected<int32_t> i(const std::string& k) {
    TS_ASSIGN_OR_RETURN(std::string s, take(k));
    int32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return l_.error("an integer for '" + k + "', got '" + s + "'");
    return v;
  }
  Expected<float> f(const std::string& k) {
    TS_ASSIGN_OR_RETURN(std::string s, take(k));
    float v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return l_.error("a number for '" + k + "', got '" + s + "'");
    return v;
  }
  // Fields printed only when they differ from their default.
  Expected<int32_t> i_or(const std::string& k, int32_t fallback) { return m_.count(k) ? i(k) : Expected<int32_t>(fallback); }
  Expected<float> f_or(const std::string& k, float fallback) { return m_.count(k) ? f(k) : Expected<float>(fallback); }
  Expected<std::string> take(const std::string& k) {
    auto it = m_.find(k);
    if (it == m_.end()) return l_.error("attribute '" + k + "'");
    std::string v = it->second;
    m_.erase(it);
    return v;
  }
  Status done() { return m_.empty() ? Status::ok() : l_.error("no attribute '" + m_.begin()->first + "' on this op"); }

 private:
  Line& l_;
  std::map<std::string, std::string> m_;
};

Expected<RopeParams> rope_fields(Fields& f, Line& l) {
  RopeParams p;
  TS_ASSIGN_OR_RETURN(p.n_heads, f.i("heads"));
  TS_ASSIGN_OR_RETURN(p.head_dim, f.i("head_dim"));
  TS_ASSIGN_OR_RETURN(p.rot_dims, f.i("rot_dims"));
  TS_ASSIGN_OR_RETURN(p.theta, f.f("theta"));
  TS_ASSIGN_OR_RETURN(std::string layout, f.take("layout"));
  if (layout == "interleaved") p.layout = RopeLayout::interleaved;
  else if (layout == "half_split") p.layout = RopeLayout::half_split;
  else return l.error("layout=interleaved or layout=half_split, got '" + layout + "'");
  TS_ASSIGN_OR_RETURN(p.freq_scale, f.f_or("freq_scale", 1.0f));
  return p;
}

// A constant's recipe: {recipe=rope_table, rot_dims=N, theta=F, positions=N}, every field, no other.
Expected<RopeTableParams> constant_recipe(Line& l, std::map<std::string, std::string> attrs) {
  Fields f(l, std::move(attrs));
  TS_ASSIGN_OR_RETURN(std::string recipe, f.take("recipe"));
  if (recipe != "rope_table") return l.error("recipe=rope_table (the only constant recipe), got '" + recipe + "'");
  RopeTableParams p;
  TS_ASSIGN_OR_RETURN(p.rot_dims, f.i("rot_dims"));
  TS_ASSIGN_OR_RETURN(p.theta, f.f("theta"));
  TS_ASSIGN_OR_RETURN(p.positions, f.i("positions"));
  TS_TRY(f.done());
  return p;
}

// "{silu(a0); mul(t0, a1)}": a0.. name the n_inputs input registers, t0.. the
// results of the instructions before this one.
Expected<ElementwiseProgram> program(Line& l, int n_inputs) {
  ElementwiseProgram p;
  if (n_inputs < 1 || n_inputs > kEwMaxInputs)
    return l.error("1 to " + std::to_string(kEwMaxInputs) + " program inputs, got " + std::to_string(n_inputs));
  p.n_inputs = (uint8_t)n_inputs;
  TS_TRY(l.expect('{'));
  auto reg = [&](int instr) -> Expected<uint8_t> {
    const std::string w = l.word();
    int k = -1;
    if (w.size() >= 2 && (w[0] == 'a' || w[0] == 't')) {
      auto [ptr, ec] = std::from_chars(w.data() + 1, w.data() + w.size(), k);
      if (ec != std::errc() || ptr != w.data() + w.size()) k = -1;
    }
    if (k >= 0 && w[0] == 'a' && k < n_inputs) return (uint8_t)k;
    if (k >= 0 && w[0] == 't' && k < instr) return (uint8_t)(n_inputs + k);
    return l.error("a register a0..a" + std::to_string(n_inputs - 1) +
                   (instr > 0 ? " or t0..t" + std::to_string(instr - 1) : std::string()) + ", got '" + w + "'");
  };
  while (!l.accept('}')) {
    if (p.n_instrs > 0) TS_TRY(l.expect(';'));
    if (p.n_instrs == kEwMaxInstrs) return l.error("at most " + std::to_string(kEwMaxInstrs) + " instructions");
    const std::string opname = l.word();
    auto op = ew_op_from_name(opname);
    if (!op) return l.error("an instruction (add, mul, silu, gelu, bias_add, gelu_f16), got '" + opname + "'");
    EwInstr& in = p.instrs[p.n_instrs];
    in.op = *op;
    TS_TRY(l.expect('('));
    TS_ASSIGN_OR_RETURN(in.a, reg(p.n_instrs));
    if (!is_unary(in.op)) {
      TS_TRY(l.expect(','));
      TS_ASSIGN_OR_RETURN(in.b, reg(p.n_instrs));
    }
    TS_TRY(l.expect(')'));
    ++p.n_instrs;
  }
  if (p.n_instrs == 0) return l.error("at least one instruction");
  return p;
}

Expected<OpParams> params_for(OpKind op, Line& l, std::map<std::string, std::string> attrs) {
  Fields f(l, std::move(attrs));
  OpParams out = NoParams{};
  switch (op) {
    case OpKind::add_rms_norm:
    case OpKind::matmul_add_rms_norm:
    case OpKind::head_rms_norm:
    case OpKind::rms_norm: {
      RmsNormParams p;
      TS_ASSIGN_OR_RETURN(p.eps, f.f("eps"));
      out = p;
      break;
    }
    case OpKind::rope: {
      TS_ASSIGN_OR_RETURN(RopeParams p, rope_fields(f, l));
      out = p;
      break;
    }
    case OpKind::kv_append: {
      KvCacheParams p;
      TS_ASSIGN_OR_RETURN(p.n_kv_heads, f.i("kv_heads"));
      TS_ASSIGN_OR_RETURN(p.head_dim, f.i("head_dim"));
      TS_ASSIGN_OR_RETURN(p.block_size, f.i("block_size"));
      out = p;
      break;
    }
    case OpKind::paged_attention: {
      AttentionParams p;
      TS_ASSIGN_OR_RETURN(p.n_heads, f.i("heads"));
      TS_ASSIGN_OR_RETURN(p.n_kv_heads, f.i("kv_heads"));
      TS_ASSIGN_OR_RETURN(p.head_dim, f.i("head_dim"));
      TS_ASSIGN_OR_RETURN(p.block_size, f.i("block_size"));
      TS_ASSIGN_OR_RETURN(p.scale, f.f("scale"));
      TS_ASSIGN_OR_RETURN(std::string causal, f.take("causal"));
      if (causal != "true" && causal != "false") return l.error("causal=true or causal=false");
      p.causal = causal == "true";
      TS_ASSIGN_OR_RETURN(p.window, f.i_or("window", 0));
      TS_ASSIGN_OR_RETURN(p.softcap, f.f_or("softcap", 0.0f));
      out = p;
      break;
    }
    case OpKind::scale: {
      ScaleParams p;
      TS_ASSIGN_OR_RETURN(p.scale, f.f("scale"));
      out = p;
      break;
    }
    case OpKind::send:
    case OpKind::recv: {
      PeerParams p;
      TS_ASSIGN_OR_RETURN(p.peer, f.i("peer"));
      TS_ASSIGN_OR_RETURN(p.cols, f.i_or("cols", 0));
      out = p;
      break;
    }
    case OpKind::all_gather: {
      AllGatherParams p;
      TS_ASSIGN_OR_RETURN(p.total, f.i("total"));
      TS_ASSIGN_OR_RETURN(p.world, f.i("world"));
      out = p;
      break;
    }
    case OpKind::softcap: {
      SoftcapParams p;
      TS_ASSIGN_OR_RETURN(p.cap, f.f("cap"));
      out = p;
      break;
    }
    case OpKind::matmul_qkv: {
      QkvSplitParams p;
      TS_ASSIGN_OR_RETURN(p.q_rows, f.i("q_rows"));
      TS_ASSIGN_OR_RETURN(p.kv_rows, f.i("kv_rows"));
      out = p;
      break;
    }
    case OpKind::rope_kv_append: {
      RopeKvAppendParams p;
      TS_ASSIGN_OR_RETURN(p.rope, rope_fields(f, l));
      TS_ASSIGN_OR_RETURN(p.kv.n_kv_heads, f.i("kv_heads"));
      TS_ASSIGN_OR_RETURN(p.kv.block_size, f.i("block_size"));
      p.kv.head_dim = p.rope.head_dim;
      out = p;
      break;
    }
    default: break;
  }
  TS_TRY(f.done());
  return out;
}

}  // namespace

Expected<Graph> parse(std::string_view text, const std::string& source) {
  Graph g;
  std::map<ValueId, Value> defs;
  std::vector<Node> nodes;
  bool seen_header = false, seen_return = false, seen_close = false;
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    Line l(text.substr(start, end - start), source, ++number);
    start = end + 1;
    // Comments: '#' or '//' lines (the pass headers and memory plans tessera ir prints).
    if (l.at_end() || l.peek('#') || l.accept_word("//")) continue;
    if (seen_close) return l.error("nothing after the closing '}'");
    if (!seen_header) {
      if (!l.accept_word("graph")) return l.error("'graph @NAME {'");
      TS_TRY(l.expect('@'));
      g.name = l.word();
      if (g.name.empty()) return l.error("a graph name");
      TS_TRY(l.expect('{'));
      if (!l.at_end()) return l.error("the end of the line");
      seen_header = true;
      continue;
    }
    if (l.accept('}')) {
      if (!seen_return) return l.error("'return %N' before '}'");
      seen_close = true;
      continue;
    }
    if (seen_return) return l.error("'}' after return");
    if (l.accept_word("return")) {
      while (!l.at_end()) {
        if (!g.outputs.empty()) TS_TRY(l.expect(','));
        TS_ASSIGN_OR_RETURN(ValueId v, l.value_ref());
        g.outputs.push_back(v);
      }
      if (g.outputs.empty()) return l.error("at least one returned value");
      seen_return = true;
      continue;
    }
    // Definitions: "%a[, %b] = ..."
    std::vector<ValueId> ids;
    do {
      TS_ASSIGN_OR_RETURN(ValueId id, l.value_ref());
      if (defs.count(id)) return l.error("%" + std::to_string(id) + " defined once (SSA)");
      for (ValueId o : ids)
        if (o == id) return l.error("%" + std::to_string(id) + " defined once (SSA)");
      ids.push_back(id);
    } while (l.accept(','));
    TS_TRY(l.expect('='));
    const std::string head = l.word();
    if (head == "input" || head == "weight" || head == "kv_pool" || head == "constant") {
      if (ids.size() != 1) return l.error("one value for an " + head);
      Value v;
      v.kind = head == "input"    ? ValueKind::step_input
               : head == "weight" ? ValueKind::weight
               : head == "kv_pool" ? ValueKind::kv_pool
                                   : ValueKind::constant;
      TS_ASSIGN_OR_RETURN(v.name, l.quoted());
      if (v.kind == ValueKind::step_input) {
        auto f = step_field_from_name(v.name);
        if (!f) return l.error("a step field (token_ids, positions, slot_mapping, query_start, seq_lens, block_tables, logit_rows), got '" + v.name + "'");
        v.field = *f;
      }
      TS_TRY(l.expect(':'));
      TS_TRY(l.type(v));
      TS_ASSIGN_OR_RETURN(auto attrs, l.attributes());
      if (auto it = attrs.find("pack"); it != attrs.end()) {
        const std::string prefix = "concat_rows(";
        if (v.kind != ValueKind::weight || it->second.rfind(prefix, 0) != 0)
          return l.error("pack=concat_rows(\"name\", ...) on a weight");
        std::string args = it->second.substr(prefix.size());
        size_t b = 0;
        while (b <= args.size()) {
          size_t e = args.find('\n', b);
          if (e == std::string::npos) e = args.size();
          v.packed_from.push_back(args.substr(b, e - b));
          b = e + 1;
        }
        attrs.erase(it);
      }
      if (auto it = attrs.find("layout"); it != attrs.end()) {
        auto layout = weight_layout_from_name(it->second);
        if (v.kind != ValueKind::weight) return l.error("layout= only on a weight, not on '" + head + "'");
        if (!layout) return l.error("layout=rows, layout=rows_x4 or layout=rows_x16 on a weight, got layout=" + it->second);
        v.layout = *layout;
        attrs.erase(it);
      }
      if (v.kind == ValueKind::constant) {
        TS_ASSIGN_OR_RETURN(v.rope_table, constant_recipe(l, std::move(attrs)));
        attrs.clear();
      }
      if (!attrs.empty()) return l.error("no attribute '" + attrs.begin()->first + "' on a " + head);
      if (!l.at_end()) return l.error("the end of the line");
      defs[ids[0]] = std::move(v);
      continue;
    }
    auto op = op_from_name(head);
    if (!op) return l.error("an op name or input/weight/kv_pool/constant, got '" + head + "'");
    Node n{*op, NoParams{}, {}, ids, ""};
    TS_TRY(l.expect('('));
    while (!l.accept(')')) {
      if (!n.inputs.empty()) TS_TRY(l.expect(','));
      TS_ASSIGN_OR_RETURN(ValueId in, l.value_ref());
      n.inputs.push_back(in);
    }
    if (*op == OpKind::elementwise || *op == OpKind::matmul_epilogue) {
      // The program's inputs: every node input, or for the epilogue the product and the inputs after w.
      const int n_inputs = *op == OpKind::elementwise ? (int)n.inputs.size() : (int)n.inputs.size() - 1;
      TS_ASSIGN_OR_RETURN(n.params, program(l, n_inputs));
    } else {
      TS_ASSIGN_OR_RETURN(auto attrs, l.attributes());
      TS_ASSIGN_OR_RETURN(n.params, params_for(*op, l, std::move(attrs)));
    }
    if (l.accept_word("tile")) {
      TS_ASSIGN_OR_RETURN(auto tile_attrs, l.attributes());
      for (const auto& [key, text] : tile_attrs) {
        const TileField* f = find_tile_field(key);
        if (!f) return l.error("a tile field (" + tile_field_names() + "), got '" + key + "'");
        int64_t v = 0;
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || p != text.data() + text.size()) return l.error("an integer for tile field '" + key + "', got '" + text + "'");
        if (const std::string why = tile_value_problem(*f, v); !why.empty())
          return l.error("tile field '" + key + "' " + why + ", got " + text);
        n.tile.*f->member = v;
      }
    }
    TS_TRY(l.expect(':'));
    for (size_t o = 0; o < ids.size(); ++o) {
      if (o) TS_TRY(l.expect(','));
      Value v;
      v.kind = ValueKind::computed;
      TS_TRY(l.type(v));
      v.producer = (int32_t)nodes.size();
      defs[ids[o]] = std::move(v);
    }
    if (l.accept('@')) {
      // BACKEND:INDEX; a bare BACKEND (IR printed before devices had indices) is its device 0.
      std::string text = l.word();
      if (text.empty()) return l.error("a device name after '@'");
      if (l.accept(':')) text += ":" + l.word();
      auto id = parse_device_id(text, "@DEVICE");
      if (!id) return l.error("a device like @cpu:0 or @vulkan:1 (" + id.status().message() + ")");
      n.device = std::move(*id);
    }
    if (l.accept('#')) n.label = l.rest();
    if (!l.at_end()) return l.error("the end of the line, '@DEVICE' or '# label'");
    nodes.push_back(std::move(n));
  }
  const std::string where = source + ":" + std::to_string(number);
  if (!seen_header) return invalid_argument(source + ": expected 'graph @NAME {'; the input is empty");
  if (!seen_close) return invalid_argument(where + ": expected the closing '}'");

  // Value numbers are dense, as the printer writes them.
  for (ValueId i = 0; i < (ValueId)defs.size(); ++i)
    if (!defs.count(i)) return invalid_argument(source + ": value %" + std::to_string(i) + " is never defined (value numbers must be 0 to " + std::to_string(defs.size() - 1) + ")");
  for (auto& [id, v] : defs) g.values.push_back(std::move(v));
  auto defined = [&](ValueId v) { return v >= 0 && v < (ValueId)g.values.size(); };
  for (const Node& n : nodes) {
    for (ValueId in : n.inputs)
      if (!defined(in)) return invalid_argument(source + ": " + n.label + ": input %" + std::to_string(in) + " is never defined");
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (const int a = aliased_input(n.op, (int)o); a >= 0 && a < (int)n.inputs.size())
        g.values[(size_t)n.outputs[o]].aliases = n.inputs[(size_t)a];
  }
  for (ValueId v : g.outputs)
    if (!defined(v)) return invalid_argument(source + ": returned value %" + std::to_string(v) + " is never defined");
  g.nodes = std::move(nodes);
  return g;
}

}  // namespace tessera::graph
