// LoweringVisitor's dispatch: every opcode reaches the handler named for it, and the table's
// rows, convert, compare and select reach `elementwise`.
#include "kiln/runtime/lowering_visitor.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kiln/ir/elementwise.h"
#include "kiln/ir/module.h"

namespace kiln::runtime {
namespace {

using ir::Instruction;
using ir::Opcode;

// Records the name of the handler called; returns false for while, to check the result passes.
class RecordingVisitor : public LoweringVisitor {
 public:
  std::string called;

 protected:
  bool on(const char* name) {
    called = name;
    return true;
  }
  bool parameter(const Instruction&) override { return on("parameter"); }
  bool constant(const Instruction&) override { return on("constant"); }
  bool iota(const Instruction&) override { return on("iota"); }
  bool elementwise(const Instruction&) override { return on("elementwise"); }
  bool broadcast_in_dim(const Instruction&) override { return on("broadcast_in_dim"); }
  bool reshape(const Instruction&) override { return on("reshape"); }
  bool transpose(const Instruction&) override { return on("transpose"); }
  bool slice(const Instruction&) override { return on("slice"); }
  bool concatenate(const Instruction&) override { return on("concatenate"); }
  bool pad(const Instruction&) override { return on("pad"); }
  bool gather(const Instruction&) override { return on("gather"); }
  bool scatter_add(const Instruction&) override { return on("scatter_add"); }
  bool dynamic_slice(const Instruction&) override { return on("dynamic_slice"); }
  bool dynamic_update_slice(const Instruction&) override { return on("dynamic_update_slice"); }
  bool reduce(const Instruction&) override { return on("reduce"); }
  bool argmax(const Instruction&) override { return on("argmax"); }
  bool dot_general(const Instruction&) override { return on("dot_general"); }
  bool convolution(const Instruction&) override { return on("convolution"); }
  bool reduce_window(const Instruction&) override { return on("reduce_window"); }
  bool rng_bits(const Instruction&) override { return on("rng_bits"); }
  bool all_reduce(const Instruction&) override { return on("all_reduce"); }
  bool all_gather(const Instruction&) override { return on("all_gather"); }
  bool reduce_scatter(const Instruction&) override { return on("reduce_scatter"); }
  bool all_to_all(const Instruction&) override { return on("all_to_all"); }
  bool collective_permute(const Instruction&) override { return on("collective_permute"); }
  bool fusion(const Instruction&) override { return on("fusion"); }
  bool while_loop(const Instruction&) override { return !on("while_loop"); }
  bool conditional(const Instruction&) override { return on("conditional"); }
  bool get_tuple_element(const Instruction&) override { return on("get_tuple_element"); }
};

TEST(LoweringVisitorTest, EveryOpcodeReachesItsHandler) {
  // The ops outside the elementwise table, by text name, and their handler.
  const std::map<std::string, std::string> kHandler = {
      {"parameter", "parameter"}, {"constant", "constant"}, {"iota", "iota"},
      {"convert", "elementwise"}, {"compare", "elementwise"}, {"select", "elementwise"},
      {"broadcast_in_dim", "broadcast_in_dim"}, {"reshape", "reshape"}, {"transpose", "transpose"},
      {"slice", "slice"}, {"concatenate", "concatenate"}, {"pad", "pad"}, {"gather", "gather"},
      {"scatter_add", "scatter_add"}, {"dynamic_slice", "dynamic_slice"},
      {"dynamic_update_slice", "dynamic_update_slice"}, {"reduce_sum", "reduce"}, {"reduce_max", "reduce"},
      {"reduce_min", "reduce"}, {"argmax", "argmax"}, {"dot_general", "dot_general"},
      {"convolution", "convolution"}, {"conv_backward_input", "convolution"},
      {"conv_backward_filter", "convolution"}, {"reduce_window", "reduce_window"},
      {"reduce_window_grad", "reduce_window"}, {"rng_bits", "rng_bits"}, {"all_reduce", "all_reduce"},
      {"all_gather", "all_gather"}, {"reduce_scatter", "reduce_scatter"}, {"all_to_all", "all_to_all"},
      {"collective_permute", "collective_permute"}, {"fusion", "fusion"}, {"while", "while_loop"}, {"conditional", "conditional"},
      {"get_tuple_element", "get_tuple_element"},
  };
  ASSERT_EQ(static_cast<int>(kHandler.size()), ir::kNumOpcodes - ir::kNumElementwiseRows);
  ir::Module m("all_ops");
  RecordingVisitor v;
  for (int i = 0; i < ir::kNumOpcodes; ++i) {
    const auto op = static_cast<Opcode>(i);
    const std::string name(ir::opcode_name(op));
    // Only the opcode matters to the dispatch: no operands, a scalar shape.
    const Instruction& inst = *m.entry()->add(op, Shape(DType::kF32, {}), {});
    v.called.clear();
    const bool lowered = v.visit(inst);
    EXPECT_EQ(lowered, op != Opcode::kWhile) << name << ": the handler's result is visit's";
    if (ir::elementwise::find_row(op) != nullptr) {
      EXPECT_EQ(v.called, "elementwise") << name << " is a row of the elementwise table";
      continue;
    }
    auto it = kHandler.find(name);
    ASSERT_NE(it, kHandler.end()) << name << " is missing from this test's table";
    EXPECT_EQ(v.called, it->second) << name;
  }
}

}  // namespace
}  // namespace kiln::runtime
