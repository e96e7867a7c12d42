#include "kiln/compiler/passes/backend_legality.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "tests/testing/expect_error.h"

namespace kiln::compiler {
namespace {

/// Runs everything but exp and log, suggesting tanh-based alternatives.
class NoExpLogTarget final : public TargetInfo {
 public:
  std::string name() const override { return "tiny"; }
  Decision supports(const ir::Instruction& inst) const override {
    if (inst.opcode() == ir::Opcode::kExp) return Decision::no("no exp kernel", "use tanh");
    if (inst.opcode() == ir::Opcode::kLog) return Decision::no("no log kernel");
    return Decision::yes();
  }
  int64_t memory_limit_bytes() const override { return int64_t{1} << 30; }
};

TEST(BackendLegalityTest, PassesAModuleOfSupportedOps) {
  ir::Module m("ok");
  ir::Builder b(m.entry());
  m.entry()->set_outputs({b.unary(ir::Opcode::kTanh, b.parameter(Shape(DType::kF32, {2}), "x"))});
  EXPECT_NO_THROW(check_legality(m, NoExpLogTarget()));
  EXPECT_TRUE(find_illegal_ops(m, NoExpLogTarget()).empty());
}

TEST(BackendLegalityTest, ListsEveryUnsupportedOpOnceWithSourceReasonAndHint) {
  ir::Module m("step");
  ir::Builder b(m.entry());
  auto* x = b.parameter(Shape(DType::kF32, {2}), "x");
  b.set_source("softmax_1");
  auto* e1 = b.unary(ir::Opcode::kExp, x);
  auto* e2 = b.unary(ir::Opcode::kExp, e1);
  b.set_source("");
  auto* l = b.unary(ir::Opcode::kLog, e2);
  m.entry()->set_outputs({l});
  EXPECT_EQ(find_illegal_ops(m, NoExpLogTarget()).size(), 3u);
  KILN_EXPECT_ERROR(check_legality(m, NoExpLogTarget()), CompileError,
                    "[tiny backend] cannot compile module @step: 3 ops are not supported; expected only ops "
                    "this backend runs, received:\n"
                    "  - exp f32[2] from softmax_1: no exp kernel. Hint: use tanh (2 times)\n"
                    "  - log f32[2] from an unknown source: no log kernel\n"
                    "Hint: replace the ops above");
}

}  // namespace
}  // namespace kiln::compiler
