// Fixture for check_op_switches.py: three op switches with a default (the violations), and
// switches the rule leaves alone. Never compiled.
int over_opcode(Opcode op) {
  switch (op) {
    case Opcode::kAdd: return 1;
    default: return 0;  // violation 1
  }
}

int nested(Kind k, LoopOp op) {
  switch (k) {  // not an op switch: its default is fine
    case Kind::kA:
      switch (op) {
        case LoopOp::kNeg: { return 2; }
        default: return 3;  // violation 2
      }
    default:
      return 4;
  }
}

int exhaustive(ir::Opcode op) {
  switch (op) {  /* default: in a comment */
    case ir::Opcode::kAdd: return "default:"[0];
    case ir::Opcode::kSub: return 5;
  }
  return 6;
}

int rows_only(ir::Opcode op) {
  switch (op) {
#include "kiln/ir/elementwise_cases.inc"
      return 7;
    default: return 8;  // violation 3: the table's rows are op labels too
  }
}
