// The op conformance table (ggml's test-backend-ops, PyTorch's OpInfo): one row per op variant
// (op_cases.h). Every row runs, for each dtype it supports, on every backend this build has
// (the reference backend, the CPU backend with the loop interpreter and with generated code,
// and any other, e.g. cuda) against the reference evaluator, on seeded random shapes with
// broadcasts, size-1 and empty dims; differentiable rows check their VJP against f64 central
// differences. The table must be complete: every opcode of opcodes.def has a row, a VJP rule
// or a reason it has none, and runs on a real CPU kernel unless listed as an allowed fallback.
// The lists of exceptions (allowed fallbacks, known wrong CPU results) must stay true: an
// entry that no case needs any more fails too.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include "kiln/ir/elementwise.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/cpu/cpu_backend.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/reference_fallbacks.h"
#include "kiln/runtime/reference/reference_backend.h"
#include "kiln/trace/vjp/vjp.h"
#include "tests/conformance/op_cases.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"
#include "tests/testing/gpu_backend.h"

namespace kiln::conformance {
namespace {

using ir::Opcode;

// Ops with no VJP rule, and why. Every other op must have one (and pass the gradient check).
const std::map<Opcode, std::string_view> kNonDifferentiable = {
    {Opcode::kParameter, "a leaf: the tape's sources, not an op applied to them"},
    {Opcode::kConstant, "a leaf: no operands"},
    {Opcode::kIota, "no operands"},
    {Opcode::kCompare, "bool result"},
    {Opcode::kArgmax, "integer result"},
    {Opcode::kRngBits, "integer result"},
    {Opcode::kFusion, "made by the compiler after tracing; never on a tape"},
    {Opcode::kWhile, "on a tape as a composite (scan, while_loop); scan_test checks scan's gradient"},
    {Opcode::kConditional, "on a tape as a composite (cond, switch_case); control_flow_test checks it"},
    {Opcode::kGetTupleElement, "part of the composite that made its while or conditional"},
};

// Fallbacks to the reference evaluator are allowed where the CPU backend lists them
// (kiln/runtime/cpu/reference_fallbacks.cpp), by op and dtype, with the reason: its fast
// kernels are oneDNN's and its own loops. Any other fallback fails the table, and so does a
// listed one no case falls back on, so the list is exactly what the CPU does not run fast.
bool fallback_allowed(const std::string& key, DType t) {
  Opcode op;
  return ir::parse_opcode(key, &op) && cpu::find_reference_fallback(op, t) != nullptr;
}

// Wrong values known on the CPU backend (both loop engines), by "<row> <dtype>", and why. Each
// must still be wrong (a fix removes its entry); any other mismatch fails the table.
const std::map<std::string, std::string_view> kKnownCpuMismatches = {};

struct NamedBackend {
  std::string name;
  std::shared_ptr<runtime::Backend> backend;
};

// Every backend of this build: CPU once per loop engine, plus whatever else the registry makes;
// the CUDA backend only where a GPU is (it is built wherever the toolkit is), else it says why not.
std::vector<NamedBackend> all_backends() {
  std::vector<NamedBackend> out = {
      {"reference", runtime::make_reference_backend()},
      {"cpu/interpreter", cpu::make_cpu_backend(0, cpu::LoopEngine::kInterpreter)},
      {"cpu/generated", cpu::make_cpu_backend(0, cpu::LoopEngine::kGenerated)},
  };
  for (const std::string& name : runtime::available_backends()) {
    if (name == "cpu" || name == "reference") continue;
    if (name == "cuda") {
      std::string why;
      if (std::shared_ptr<runtime::Backend> gpu = testing::gpu_backend(why)) out.push_back({name, gpu});
      else std::cout << "[ conform  ] cuda is built, not run: no CUDA device: " << why << "\n";
      continue;
    }
    out.push_back({name, runtime::make_backend(name)});
  }
  return out;
}

TEST(OpConformanceTest, EveryOpcodeHasARow) {
  // Verify that the table names every opcode of opcodes.def (a new op needs a row).
  std::set<Opcode> covered;
  for (const OpCase& c : op_cases()) covered.insert(c.op);
  for (int i = 0; i < ir::kNumOpcodes; ++i) {
    const auto op = static_cast<Opcode>(i);
    EXPECT_TRUE(covered.count(op)) << ir::opcode_name(op) << " has no row in tests/conformance/op_cases.cpp";
  }
}

TEST(OpConformanceTest, EveryOpHasAVjpRuleOrIsListedAsNonDifferentiable) {
  for (int i = 0; i < ir::kNumOpcodes; ++i) {
    const auto op = static_cast<Opcode>(i);
    if (kNonDifferentiable.count(op)) continue;
    EXPECT_NE(trace::find_vjp(op), nullptr)
        << ir::opcode_name(op) << " has no VJP rule (kiln/trace/vjp/) and is not listed in "
        << "kNonDifferentiable: a gradient through it would be an error";
  }
}

// The elementwise table (ir/elementwise.def) generates everything about a row but its VJP and
// its conformance row, which are written by hand: a row without either fails here.
TEST(OpConformanceTest, EveryElementwiseRowHasAVjpAndARow) {
  std::map<Opcode, std::set<DType>> checked;  // the dtypes each row's main conformance case runs
  for (const OpCase& c : op_cases())
    if (!c.values_only) checked[c.op].insert(c.dtypes.begin(), c.dtypes.end());
  ASSERT_GT(std::size(ir::elementwise::kRows), 20u);
  for (const ir::elementwise::RowInfo& row : ir::elementwise::kRows) {
    EXPECT_NE(trace::find_vjp(row.opcode), nullptr)
        << row.name << " is a row of ir/elementwise.def without a VJP in kiln/trace/vjp/elementwise_vjp.cpp";
    EXPECT_EQ(kNonDifferentiable.count(row.opcode), 0u) << row.name << ": elementwise rows are differentiable";
    auto it = checked.find(row.opcode);
    if (it == checked.end()) {
      ADD_FAILURE() << row.name << " is a row of ir/elementwise.def without a case in tests/conformance/op_cases.cpp";
      continue;
    }
    // The row's main case runs every dtype the row accepts (shape inference rejects the rest).
    for (DType t : {DType::kF32, DType::kF64, DType::kBF16, DType::kF16, DType::kI32, DType::kI64, DType::kU8, DType::kBool})
      EXPECT_EQ(it->second.count(t) > 0, ir::elementwise::accepts(row.dtypes, t))
          << row.name << " " << t << ": its conformance case and its dtypes column disagree";
  }
}

TEST(OpConformanceTest, ValuesMatchTheReferenceOnEveryBackendWithoutFallbacks) {
  std::vector<NamedBackend> backends = all_backends();
  std::set<std::string> extra;
  for (const NamedBackend& b : backends)
    if (b.name != "reference" && b.name.rfind("cpu/", 0) != 0) extra.insert(b.name);
  if (extra.empty()) std::cout << "[ conform  ] no backend beyond reference and cpu in this build\n";
  int cases = 0;
  // "<key> in <row> on <backend>" -> the dtypes it fell back in: one failure each.
  std::map<std::string, std::string> fallbacks;
  std::set<std::pair<std::string, DType>> allowed_seen;
  std::set<std::string> known_seen;
  for (const OpCase& c : op_cases()) {
    for (DType t : c.dtypes) {
      std::vector<HostTensor> args = c.arguments(t);
      std::vector<HostTensor> expected;
      try {
        expected = ir::evaluate(*c.module(t), args);
      } catch (const Error& e) {
        ADD_FAILURE() << c.name << " " << t << ": the reference evaluator throws: " << e.what();
        continue;
      }
      for (const NamedBackend& b : backends) {
        ++cases;
        const std::string where = str_cat(c.name, " ", t, " on ", b.name);
        try {
          std::unique_ptr<runtime::Executable> exe = b.backend->compile(c.module(t), {});
          std::set<std::string> keys;
          for (const std::string& key : exe->reference_fallbacks()) {
            if (fallback_allowed(key, t)) allowed_seen.insert({key, t});
            else keys.insert(key);
          }
          for (const std::string& key : keys) {
            std::string& dtypes = fallbacks[str_cat(key, " in ", c.name, " on ", b.name)];
            dtypes += str_cat(dtypes.empty() ? "" : " ", t);
          }
          std::vector<HostTensor> actual = exe->run(args);
          ASSERT_EQ(actual.size(), expected.size()) << where;
          const std::string row = str_cat(c.name, " ", t);
          const bool known = b.name.rfind("cpu/", 0) == 0 && kKnownCpuMismatches.count(row) > 0;
          for (size_t k = 0; k < actual.size(); ++k) {
            std::string diff = compare_values(actual[k], expected[k], c.tolerance(t));
            if (known && !diff.empty()) known_seen.insert(row);
            if (known) continue;
            EXPECT_EQ(diff, "") << where << ", shape variant " << k << " " << c.describe_variant(k, t)
                                << "\n" << exe->describe();
          }
        } catch (const Error& e) {
          ADD_FAILURE() << where << " throws " << e.kind() << ": " << e.what();
        }
      }
    }
  }
  for (const auto& [what, dtypes] : fallbacks)
    ADD_FAILURE() << "runs " << what << " (" << dtypes << ") on the reference evaluator: no fast "
                  << "kernel, and runtime/cpu/reference_fallbacks.cpp does not list it";
  for (const auto& [row, reason] : kKnownCpuMismatches) {
    EXPECT_TRUE(known_seen.count(row)) << row << " matches the reference now: remove it from kKnownCpuMismatches";
    if (known_seen.count(row)) std::cout << "[ conform  ] known wrong on cpu: " << row << ": " << reason << "\n";
  }
  // An entry no case needs any more (a kernel was added) must go, so the list stays true.
  for (const cpu::ReferenceFallbackRule& rule : cpu::reference_fallback_rules())
    for (DType t : rule.dtypes)
      EXPECT_TRUE(allowed_seen.count({std::string(ir::opcode_name(rule.op)), t}))
          << "runtime/cpu/reference_fallbacks.cpp lists " << ir::opcode_name(rule.op) << " in " << t
          << ", but no case falls back on it: remove it";
  std::cout << "[ conform  ] " << cases << " op x dtype x backend cases\n";
}

TEST(OpConformanceTest, GradientsMatchFiniteDifferences) {
  // Every shape variant small enough (central differences run the op twice per element),
  // empty ones included: a VJP must handle them too.
  constexpr int64_t kMaxElements = 256;
  int checked = 0;
  for (const OpCase& c : op_cases()) {
    if (kNonDifferentiable.count(c.op) || c.values_only) continue;
    for (size_t k = 0; k < c.variants.size(); ++k) {
      std::vector<HostTensor> inputs = c.gradient_arguments(k);
      int64_t elements = 0;
      for (const HostTensor& x : inputs) elements += x.num_elements();
      if (elements > kMaxElements) continue;
      ++checked;
      auto f = [&c, k](const std::vector<Tensor>& xs) { return c.apply(k, xs); };
      const std::string where = str_cat(c.name, ", shape variant ", k, " ", c.describe_variant(k, DType::kF64));
      if (!c.gradient_error.empty()) {
        KILN_EXPECT_ERROR(testing::check_gradients(f, inputs), CompileError, c.gradient_error);
        continue;
      }
      try {
        EXPECT_TRUE(testing::check_gradients(f, inputs, c.grad_options)) << where;
      } catch (const Error& e) {
        ADD_FAILURE() << where << ": the gradient check throws " << e.kind() << ": " << e.what();
      }
    }
  }
  std::cout << "[ conform  ] " << checked << " gradients against central differences\n";
}

TEST(OpConformanceTest, RejectedDTypesAreClearErrors) {
  // A dtype a row does not list must be refused by shape inference or the reference evaluator
  // with a DTypeError naming the op, never accepted silently.
  for (const OpCase& c : op_cases()) {
    if (c.values_only) continue;
    for (int i = 0; i < kNumDTypes; ++i) {
      const auto t = static_cast<DType>(i);
      if (std::find(c.dtypes.begin(), c.dtypes.end(), t) != c.dtypes.end()) continue;
      // Strings are host-only: no IR value holds them (making one is a DTypeError naming the
      // tensor, before any op sees it; tests/core's HostTensorStringTest).
      if (t == DType::kString) continue;
      try {
        std::unique_ptr<ir::Module> m = c.module(t);
        ir::evaluate(*m, c.arguments(t));
        ADD_FAILURE() << c.name << " accepts " << t << ", which its row does not list: list it "
                      << "(every backend must then run it) or reject it with a DTypeError";
      } catch (const DTypeError& e) {
        // A fusion's error names the body op that refused the dtype.
        std::string_view op = c.op == Opcode::kFusion ? "exp" : ir::opcode_name(c.op);
        EXPECT_NE(std::string(e.what()).find(op), std::string::npos)
            << c.name << " " << t << ": the error does not name the op: " << e.what();
      } catch (const Error& e) {
        ADD_FAILURE() << c.name << " " << t << ": expected a DTypeError, received " << e.kind() << ": " << e.what();
      }
    }
  }
}

TEST(OpConformanceTest, ExpOnIntegersIsADTypeErrorThatSaysWhatToDo) {
  ir::Module m("m");
  ir::Builder b(m.entry());
  ir::Instruction* x = b.parameter(Shape(DType::kI32, {3}), "x");
  KILN_EXPECT_ERROR(b.unary(Opcode::kExp, x), DTypeError, "[exp] needs a floating-point operand, received i32[3]");
}

}  // namespace
}  // namespace kiln::conformance
