#include "kiln/ir/printer.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"

namespace kiln::ir {
namespace {

TEST(PrinterTest, PrintsInstructionsInPostOrderWithAttributes) {
  Module m("step");
  Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {8, 4}), "x");
  auto* w = b.parameter(Shape(DType::kF32, {4, 3}), "w");
  auto* y = b.dot_general(x, w, {.lhs_contracting = {1}, .rhs_contracting = {0}});
  auto* s = b.reduce(Opcode::kReduceSum, y, {0});
  m.entry()->set_outputs({s, y});
  m.add_alias({1, 1});
  EXPECT_EQ(to_string(m),
            "module @step\n"
            "entry {\n"
            "  %0 = f32[8,4] parameter(0) \"x\"\n"
            "  %1 = f32[4,3] parameter(1) \"w\"\n"
            "  %2 = f32[8,3] dot_general(%0, %1), lhs_contracting={1}, rhs_contracting={0}\n"
            "  %3 = f32[3] reduce_sum(%2), axes={0}\n"
            "  outputs(%3, %2)\n"
            "}\n"
            "aliases(output 1 -> parameter 1)\n");
}

TEST(PrinterTest, PrintsSmallConstantsAndSources) {
  Module m("c");
  Builder b(m.entry());
  b.set_source("dense");
  auto* c = b.scalar(1.5, DType::kF32);
  m.entry()->add_output(c);
  EXPECT_EQ(to_string(*m.entry(), {.show_sources = true}),
            "entry {\n  %0 = f32[] constant(1.5)  # dense\n  outputs(%0)\n}\n");
}

}  // namespace
}  // namespace kiln::ir
