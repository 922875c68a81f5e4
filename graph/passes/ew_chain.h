#pragma once
// What fuse_elementwise and fuse_matmul_epilogue share: which ops an
// ElementwiseProgram can hold, and a builder that turns a chain of such nodes
// into a program over deduplicated input values. Internal to graph/passes.
#include <string>
#include <vector>

#include "graph/ir.h"

namespace tessera::graph::passes {

// How many program instructions the op takes (silu_mul: silu then mul), 0 if it is not elementwise.
int ew_instr_count(OpKind op);

class ProgramBuilder {
 public:
  // The register reading v; one per distinct value.
  int input(ValueId v);
  // Appends the instructions of `node` (an op with ew_instr_count > 0) over
  // the operand registers; returns the register of its result.
  int append(const Node& node, int a, int b);
  int instr_count() const { return (int)instrs_.size(); }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  // Registers numbered as ElementwiseProgram has them: inputs, then instruction results.
  ElementwiseProgram finish() const;

 private:
  static constexpr int kTempBase = 1 << 10;  // provisional numbering of results until the input count is final
  struct Instr {
    EwOp op;
    int a, b;
  };
  int emit(EwOp op, int a, int b);
  std::vector<ValueId> inputs_;
  std::vector<Instr> instrs_;
};

// "blk.0.ffn_up+bias+gelu": the first label whole, the others' last '.'-segment.
std::string joined_label(const std::vector<const Node*>& nodes);

}  // namespace tessera::graph::passes
