// The CUDA backend's index kernels (kiln/compiler/codegen/gpu_index_kernels.h) run here through
// their host variants: the same emitted body, called over a loop instead of GPU threads, JIT
// compiled for this CPU. Every op x dtype against the reference evaluator (random shapes with
// empty dims, clamped indices and starts, negative padding, duplicate scatter indices), and a
// few cases against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "kiln/compiler/codegen/gpu_index_kernels.h"
#include "kiln/compiler/codegen/llvm_codegen.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cpu/cpu_jit.h"
#include "tests/testing/index_op_cases.h"

namespace kiln::cpu {
namespace {

using codegen::IndexKernelUnit;
using ir::Builder;
using ir::Instruction;
using ir::Opcode;

// `x` converted to `to` by the IR's convert (what the CUDA lowering's widen/narrow loops do).
HostTensor convert_as_ir(const HostTensor& x, DType to) {
  ir::Module m("convert");
  Builder b(m.entry());
  m.entry()->set_outputs({b.convert(b.parameter(x.shape(), "x"), to)});
  const std::vector<HostTensor> args = {x};
  return ir::evaluate(m, args)[0];
}

// Compiles the host variants of `cases`' kernels (one object) and runs each case as the CUDA
// lowering does: scatter_add and dynamic_update_slice into a copy of x (scatter_add's widened
// to its accumulator and narrowed after), the rest into a fresh result.
std::vector<HostTensor> run_on_host(const std::vector<testing::IndexOpCase>& cases, const std::string& prefix) {
  CpuJit* jit = CpuJit::instance();
  EXPECT_NE(jit, nullptr) << "LLVM cannot target this CPU";
  if (jit == nullptr) return {};
  std::vector<IndexKernelUnit> units;
  std::vector<std::string> names;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::optional<IndexKernelUnit> u = IndexKernelUnit::of(cases[i].op(), str_cat(prefix, i));
    EXPECT_TRUE(u.has_value()) << cases[i].label();
    units.push_back(*u);
    names.push_back(u->name);
  }
  const codegen::GeneratedCode code = codegen::generate_loop_code({}, jit->target(), false, "", {}, units);
  const std::vector<void*> fns = jit->load_object(code.binary, names);
  std::vector<HostTensor> results;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Instruction& op = cases[i].op();
    const std::vector<HostTensor>& args = cases[i].args;
    const bool into_x = op.opcode() == Opcode::kScatterAdd || op.opcode() == Opcode::kDynamicUpdateSlice;
    HostTensor out(op.shape());
    if (into_x) {
      out = convert_as_ir(args[0], units[i].accumulator == units[i].dtype || op.opcode() != Opcode::kScatterAdd
                                       ? op.dtype() : units[i].accumulator).clone();
    } else {
      std::memset(out.raw_data(), 0xA5, static_cast<size_t>(out.byte_size()));  // unwritten elements show
    }
    std::vector<void*> ptrs;
    for (size_t a = into_x ? 1 : 0; a < args.size(); ++a) ptrs.push_back(const_cast<void*>(args[a].raw_data()));
    ptrs.push_back(out.raw_data());
    EXPECT_EQ(ptrs.size(), units[i].pointers()) << cases[i].label();
    reinterpret_cast<codegen::CpuIndexFn>(fns[i])(ptrs.data(), 0, units[i].threads());
    results.push_back(out.dtype() == op.dtype() ? out : convert_as_ir(out, op.dtype()));
  }
  return results;
}

TEST(IndexCodegenTest, EveryOpAndDtypeMatchesTheReference) {
  testing::IndexOpCaseMaker maker(20261205);
  const std::vector<testing::IndexOpCase> cases = maker.all(/*per=*/8);
  const std::vector<HostTensor> actual = run_on_host(cases, "kiln_index_test_all_");
  ASSERT_EQ(actual.size(), cases.size());
  // What the random cases must have covered, or the comparison checks less than it claims.
  int empty = 0, cropped = 0, clamped = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    testing::expect_index_op_result(cases[i], actual[i]);
    const Instruction& op = cases[i].op();
    empty += cases[i].args[0].num_elements() == 0 || op.shape().num_elements() == 0;
    if (op.opcode() == Opcode::kPad)
      for (size_t d = 0; d < op.attrs().starts.size(); ++d) cropped += op.attrs().starts[d] < 0 || op.attrs().limits[d] < 0;
    if (op.opcode() == Opcode::kGather || op.opcode() == Opcode::kScatterAdd)
      for (int64_t v : cases[i].args[1].to_vector<int64_t>()) clamped += v < 0 || v >= op.operand(0)->shape().dims()[static_cast<size_t>(op.attrs().dims[0])];
    if (op.opcode() == Opcode::kDynamicSlice)
      for (size_t s = 1; s < cases[i].args.size(); ++s) clamped += cases[i].args[s].to_vector<int64_t>()[0] < 0;
  }
  EXPECT_GT(empty, 10);
  EXPECT_GT(cropped, 10);
  EXPECT_GT(clamped, 10);
}

// A case of one op made by `build` over parameters holding `args`.
testing::IndexOpCase one_op(std::vector<HostTensor> args,
                            const std::function<Instruction*(Builder&, const std::vector<Instruction*>&)>& build) {
  testing::IndexOpCase c;
  c.module = std::make_unique<ir::Module>("hand");
  Builder b(c.module->entry());
  std::vector<Instruction*> p;
  for (const HostTensor& a : args) p.push_back(b.parameter(a.shape(), str_cat("p", p.size())));
  c.module->entry()->set_outputs({build(b, p)});
  c.args = std::move(args);
  return c;
}

// Values worked out by hand, independent of the reference evaluator.
TEST(IndexCodegenTest, ClampsIndicesAndStartsAndAccumulatesDuplicates) {
  std::vector<testing::IndexOpCase> cases;
  // gather rows -5, 1, 7 of [10, 20, 30]: 10, 20, 30
  cases.push_back(one_op({HostTensor::from_vector<int32_t>({3}, {10, 20, 30}), HostTensor::from_vector<int64_t>({3}, {-5, 1, 7})},
                         [](Builder& b, auto& p) { return b.gather(p[0], p[1], 0); }));
  // scatter_add of 1, 2, 3, 4 at 2, 2, -1, 9 into [0, 0, 0]: [3, 0, 7]
  cases.push_back(one_op({HostTensor::from_vector<int32_t>({3}, {0, 0, 0}), HostTensor::from_vector<int32_t>({4}, {2, 2, -1, 9}),
                          HostTensor::from_vector<int32_t>({4}, {1, 2, 3, 4})},
                         [](Builder& b, auto& p) { return b.scatter_add(p[0], p[1], p[2], 0); }));
  // two elements of [1 .. 5] from -4 and from 9: [1, 2] and [4, 5]
  for (HostTensor start : {HostTensor::scalar<int32_t>(-4), HostTensor::scalar<int64_t>(9)})
    cases.push_back(one_op({HostTensor::from_vector<float>({5}, {1, 2, 3, 4, 5}), start},
                           [](Builder& b, auto& p) { return b.dynamic_slice(p[0], {p[1]}, {2}); }));
  // [7, 8] into [0, 0, 0, 0] at 5: [0, 0, 7, 8]
  cases.push_back(one_op({HostTensor::from_vector<int64_t>({4}, {0, 0, 0, 0}), HostTensor::from_vector<int64_t>({2}, {7, 8}),
                          HostTensor::scalar<int32_t>(5)},
                         [](Builder& b, auto& p) { return b.dynamic_update_slice(p[0], p[1], {p[2]}); }));
  // [1, 2, 3] padded by -1 low and 2 high with 9: [2, 3, 9, 9]
  cases.push_back(one_op({HostTensor::from_vector<uint8_t>({3}, {1, 2, 3})},
                         [](Builder& b, auto& p) { return b.pad(p[0], {-1}, {2}, 9.0); }));
  // 200 + 100 added at 0 to u8 [50] wraps: (50 + 300) % 256 = 94
  cases.push_back(one_op({HostTensor::from_vector<uint8_t>({1}, {50}), HostTensor::from_vector<int32_t>({2}, {0, 0}),
                          HostTensor::from_vector<uint8_t>({2}, {200, 100})},
                         [](Builder& b, auto& p) { return b.scatter_add(p[0], p[1], p[2], 0); }));
  // [[1, 2]] and [[3], [4]]... along axis 1 of [2, 1] and [2, 2]: [[1, 3, 4], [2, 5, 6]]
  cases.push_back(one_op({HostTensor::from_vector<float>({2, 1}, {1, 2}), HostTensor::from_vector<float>({2, 2}, {3, 4, 5, 6})},
                         [](Builder& b, auto& p) { return b.concatenate({p[0], p[1]}, 1); }));
  const std::vector<HostTensor> r = run_on_host(cases, "kiln_index_test_hand_");
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[0].to_vector<int32_t>(), (std::vector<int32_t>{10, 20, 30}));
  EXPECT_EQ(r[1].to_vector<int32_t>(), (std::vector<int32_t>{3, 0, 7}));
  EXPECT_EQ(r[2].to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(r[3].to_vector<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(r[4].to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 7, 8}));
  EXPECT_EQ(r[5].to_vector<uint8_t>(), (std::vector<uint8_t>{2, 3, 9, 9}));
  EXPECT_EQ(r[6].to_vector<uint8_t>(), (std::vector<uint8_t>{94}));
  EXPECT_EQ(r[7].to_vector<float>(), (std::vector<float>{1, 3, 4, 2, 5, 6}));
}

}  // namespace
}  // namespace kiln::cpu
