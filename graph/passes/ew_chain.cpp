#include "graph/passes/ew_chain.h"

namespace tessera::graph::passes {

int ew_instr_count(OpKind op) {
  switch (op) {
    case OpKind::add:
    case OpKind::mul:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::bias_add: return 1;
    case OpKind::silu_mul:
    case OpKind::gelu_mul: return 2;
    default: return 0;
  }
}

int ProgramBuilder::input(ValueId v) {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i] == v) return (int)i;
  inputs_.push_back(v);
  return (int)inputs_.size() - 1;
}

int ProgramBuilder::emit(EwOp op, int a, int b) {
  instrs_.push_back({op, a, b});
  return kTempBase + (int)instrs_.size() - 1;
}

int ProgramBuilder::append(const Node& node, int a, int b) {
  switch (node.op) {
    case OpKind::add: return emit(EwOp::add, a, b);
    case OpKind::mul: return emit(EwOp::mul, a, b);
    case OpKind::silu: return emit(EwOp::silu, a, 0);
    case OpKind::gelu: return emit(EwOp::gelu, a, 0);
    case OpKind::bias_add: return emit(EwOp::bias_add, a, b);
    case OpKind::silu_mul: return emit(EwOp::mul, emit(EwOp::silu, a, 0), b);  // silu_mul computes exactly this
    case OpKind::gelu_mul: return emit(EwOp::mul, emit(EwOp::gelu_f16, a, 0), b);  // and gelu_mul this
    default: return -1;
  }
}

ElementwiseProgram ProgramBuilder::finish() const {
  ElementwiseProgram p;
  p.n_inputs = (uint8_t)inputs_.size();
  p.n_instrs = (uint8_t)instrs_.size();
  auto reg = [&](int r) { return (uint8_t)(r >= kTempBase ? p.n_inputs + (r - kTempBase) : r); };
  for (size_t i = 0; i < instrs_.size() && i < (size_t)kEwMaxInstrs; ++i) {
    const Instr& in = instrs_[i];
    p.instrs[i] = {in.op, reg(in.a), is_unary(in.op) ? (uint8_t)0 : reg(in.b)};
  }
  return p;
}

std::string joined_label(const std::vector<const Node*>& nodes) {
  std::string s;
  for (const Node* n : nodes) {
    if (n->label.empty()) continue;
    s += s.empty() ? n->label : "+" + n->label.substr(n->label.rfind('.') + 1);
  }
  return s;
}

}  // namespace tessera::graph::passes
