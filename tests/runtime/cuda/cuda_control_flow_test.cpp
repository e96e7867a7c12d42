// while, conditional and get_tuple_element on the CUDA backend. Without a GPU: loops (trip
// count known or read from the GPU per iteration, invariants, a matmul/reduction recurrence,
// a scan's stacked outputs updated in place),
// a while nested in a conditional and conditionals of 2 and 3 branches lower into one PTX
// module that ptxas accepts, with unique kernel symbols and the nesting shown by describe().
// On a GPU: the same programs against the reference evaluator.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "kiln/compiler/default_pipeline.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "tests/testing/backend_conformance.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/gpu_backend.h"
#include "tests/testing/scan_loop.h"

namespace kiln::cuda {
namespace {

using ir::Builder;
using ir::Computation;
using ir::Instruction;
using ir::Opcode;

const Shape kCounter(DType::kI32, {});

Computation* new_computation(Builder& b, const char* what) {
  ir::Module& m = *b.computation()->module();
  return m.add_computation(str_cat(what, m.computations().size()));
}

// carried (x f32[n], i, w f32[n]): x = tanh(x * w) + 0.5, i += 1, w passes through (an
// invariant); while i < t. `tell` gives the while trip_count = t, as the tracer does for scans.
Instruction* counted_loop(Builder& b, Instruction* x, Instruction* w, int64_t t, bool tell) {
  const Shape& s = x->shape();
  Computation* body = new_computation(b, "body");
  Builder bb(body);
  Instruction* bx = bb.parameter(s, "x");
  Instruction* bi = bb.parameter(kCounter, "i");
  Instruction* bw = bb.parameter(s, "w");
  Instruction* nx = bb.binary(Opcode::kAdd, bb.unary(Opcode::kTanh, bb.binary(Opcode::kMul, bx, bw)), bb.full(s, 0.5));
  body->set_outputs({nx, bb.binary(Opcode::kAdd, bi, bb.scalar(1, DType::kI32)), bw});
  Computation* cond = new_computation(b, "cond");
  Builder cb(cond);
  cb.parameter(s, "x");
  Instruction* ci = cb.parameter(kCounter, "i");
  cb.parameter(s, "w");
  cond->add_output(cb.compare(ir::Comparison::kLt, ci, cb.scalar(static_cast<double>(t), DType::kI32)));
  return b.while_loop({x, b.scalar(0, DType::kI32), w}, cond, body, tell ? t : -1);
}

// carried (x f32[n]): x = 2x + 1 while sum(x) < limit: the trip count depends on the data.
Instruction* doubling_loop(Builder& b, Instruction* x, double limit) {
  const Shape& s = x->shape();
  Computation* body = new_computation(b, "body");
  Builder bb(body);
  Instruction* bx = bb.parameter(s, "x");
  body->add_output(bb.binary(Opcode::kAdd, bb.binary(Opcode::kMul, bx, bb.full(s, 2.0)), bb.full(s, 1.0)));
  Computation* cond = new_computation(b, "cond");
  Builder cb(cond);
  Instruction* cx = cb.parameter(s, "x");
  cond->add_output(cb.compare(ir::Comparison::kLt, cb.reduce(Opcode::kReduceSum, cx, {0}), cb.scalar(limit, DType::kF32)));
  return b.while_loop({x}, cond, body);
}

// An RNN-like recurrence over carried (h f32[4,8], acc f32[4], w f32[8,8] invariant):
// h = tanh(h w), acc += sum(h, axis 1), t times (trip count known).
Instruction* recurrence(Builder& b, Instruction* h, Instruction* w, int64_t t) {
  const Shape hs = h->shape(), as(DType::kF32, {hs.dims()[0]});
  Computation* body = new_computation(b, "body");
  Builder bb(body);
  Instruction* bh = bb.parameter(hs, "h");
  Instruction* bacc = bb.parameter(as, "acc");
  Instruction* bi = bb.parameter(kCounter, "i");
  Instruction* bw = bb.parameter(w->shape(), "w");
  Instruction* nh = bb.unary(Opcode::kTanh, bb.dot_general(bh, bw, {{}, {}, {1}, {0}}));
  body->set_outputs({nh, bb.binary(Opcode::kAdd, bacc, bb.reduce(Opcode::kReduceSum, nh, {1})),
                     bb.binary(Opcode::kAdd, bi, bb.scalar(1, DType::kI32)), bw});
  Computation* cond = new_computation(b, "cond");
  Builder cb(cond);
  cb.parameter(hs, "h");
  cb.parameter(as, "acc");
  Instruction* ci = cb.parameter(kCounter, "i");
  cb.parameter(w->shape(), "w");
  cond->add_output(cb.compare(ir::Comparison::kLt, ci, cb.scalar(static_cast<double>(t), DType::kI32)));
  return b.while_loop({h, b.full(as, 0.0), b.scalar(0, DType::kI32), w}, cond, body, t);
}

// conditional(selector, x, w) over f32[n]: branch 0 runs counted_loop (a while nested in a
// branch), branch 1 2x, branch 2 (when `three`) exp(x) - w.
Instruction* branches(Builder& b, Instruction* selector, Instruction* x, Instruction* w, bool three) {
  const Shape& s = x->shape();
  std::vector<Computation*> bs;
  for (int k = 0; k < (three ? 3 : 2); ++k) {
    Computation* c = bs.emplace_back(new_computation(b, "branch"));
    Builder cb(c);
    Instruction* cx = cb.parameter(s, "x");
    Instruction* cw = cb.parameter(s, "w");
    if (k == 0) c->add_output(cb.get_tuple_element(counted_loop(cb, cx, cw, 3, false), 0));
    if (k == 1) c->add_output(cb.binary(Opcode::kMul, cx, cb.full(s, 2.0)));
    if (k == 2) c->add_output(cb.binary(Opcode::kSub, cb.unary(Opcode::kExp, cx), cw));
  }
  return b.conditional(selector, {x, w}, bs);
}

// A module over `params` whose outputs `build` makes.
std::unique_ptr<ir::Module> module(const std::vector<Shape>& params, const testing::BuildFn& build) {
  auto m = std::make_unique<ir::Module>("control");
  Builder b(m->entry());
  std::vector<Instruction*> ps;
  for (size_t i = 0; i < params.size(); ++i) ps.push_back(b.parameter(params[i], str_cat("p", i)));
  m->entry()->set_outputs(build(b, ps));
  return m;
}

// The module optimized as the backend's compile() does, lowered without a GPU; every kernel
// a step names is one `.entry` of the PTX (symbols unique across nested step lists), and
// ptxas accepts the PTX for sm_90.
GpuLowering lowered_for_sm90(std::unique_ptr<ir::Module> m) {
  const compiler::AcceptAllTarget target("cuda", int64_t{1} << 36, 256);
  compiler::check_and_optimize(*m, target, DebugOptions::global(), m->name());
  GpuLowering l = lower_without_gpu(*m, 90);
  const std::regex kernel("kernel ([A-Za-z0-9_]+) \\(");
  std::multiset<std::string> symbols;
  for (auto it = std::sregex_iterator(l.steps.begin(), l.steps.end(), kernel); it != std::sregex_iterator(); ++it) {
    const std::string sym = (*it)[1];
    symbols.insert(sym);
    EXPECT_EQ(symbols.count(sym), 1u) << sym << " names two steps' kernels\n" << l.steps;
    EXPECT_NE(l.ptx.find(str_cat(".entry ", sym, "(")), std::string::npos) << sym << " is not in the PTX";
  }
  EXPECT_FALSE(symbols.empty()) << l.steps;
  if (std::filesystem::exists(KILN_CUDA_PTXAS)) {
    std::string log;
    EXPECT_EQ(testing::ptxas_sm90(KILN_CUDA_PTXAS, l.ptx, log), 0) << log;
  }
  return l;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// counted_loop over f32[64] for 5 iterations, lowered.
GpuLowering counted_loop_lowered(bool tell) {
  const Shape s(DType::kF32, {64});
  return lowered_for_sm90(module({s, s}, [&](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.get_tuple_element(counted_loop(b, p[0], p[1], 5, tell), 0)};
  }));
}

TEST(CudaControlFlowLoweringTest, AWhileWithAnUnknownTripCountReadsItsPredicateAndKeepsInvariantsInPlace) {
  const GpuLowering l = counted_loop_lowered(false);
  EXPECT_TRUE(has(l.steps, "while (predicate read to the host per iteration; 2 carried, 1 invariant)")) << l.steps;
  EXPECT_TRUE(has(l.steps, "\n  condition:\n    ")) << l.steps;
  EXPECT_TRUE(has(l.steps, "\n  body:\n    loop kernel n")) << l.steps;
}

TEST(CudaControlFlowLoweringTest, AWhileWithTheTracersTripCountEvaluatesNoCondition) {
  const GpuLowering l = counted_loop_lowered(true);
  EXPECT_TRUE(has(l.steps, "while (trip_count 5, no condition; 2 carried, 1 invariant)")) << l.steps;
  EXPECT_FALSE(has(l.steps, "condition:")) << l.steps;
  EXPECT_TRUE(has(l.steps, "  body (x5):\n")) << l.steps;
}

TEST(CudaControlFlowLoweringTest, ADataDependentWhileRunsItsReductionConditionOnTheGpu) {
  const GpuLowering l = lowered_for_sm90(module({Shape(DType::kF32, {100})}, [](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.get_tuple_element(doubling_loop(b, p[0], 1e4), 0)};
  }));
  EXPECT_TRUE(has(l.steps, "while (predicate read to the host per iteration; 1 carried, 0 invariant)")) << l.steps;
  EXPECT_TRUE(has(l.steps, "reduce_sum kernel n")) << l.steps;
}

TEST(CudaControlFlowLoweringTest, ARecurrenceWithAMatmulAndAReductionLowersInItsBody) {
  const GpuLowering l = lowered_for_sm90(module({Shape(DType::kF32, {4, 8}), Shape(DType::kF32, {8, 8})}, [](Builder& b, auto& p) {
    Instruction* loop = recurrence(b, p[0], p[1], 3);
    return std::vector<Instruction*>{b.get_tuple_element(loop, 0), b.get_tuple_element(loop, 1)};
  }));
  EXPECT_TRUE(has(l.steps, "while (trip_count 3, no condition; 3 carried, 1 invariant)")) << l.steps;
  EXPECT_TRUE(has(l.steps, "\n    matmul")) << l.steps;
}

TEST(CudaControlFlowLoweringTest, AScanUpdatesItsStackedOutputsInPlaceUnlessTheBodyReadsThem) {
  const Shape s(DType::kF32, {6, 16});
  for (bool read_old_ys : {false, true}) {
    const GpuLowering l = lowered_for_sm90(module({s, s}, [&](Builder& b, auto& p) {
      return std::vector<Instruction*>{b.get_tuple_element(testing::row_writing_loop(b, p[0], p[1], 0, read_old_ys), 0)};
    }));
    EXPECT_TRUE(has(l.steps, "dynamic_update_slice kernel n")) << l.steps;
    // In place: the kernel writes the update into the carried ys, with no copy of ys first.
    EXPECT_EQ(has(l.steps, "copy(x)"), read_old_ys) << l.steps;
  }
}

TEST(CudaControlFlowLoweringTest, AWhileNestedInAThreeWayConditionalLowersWithUniqueKernels) {
  const Shape s(DType::kF32, {32});
  const GpuLowering l = lowered_for_sm90(module({kCounter, s, s}, [](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.get_tuple_element(branches(b, p[0], p[1], p[2], true), 0)};
  }));
  EXPECT_TRUE(has(l.steps, "conditional (3 branches, selector read to the host)")) << l.steps;
  for (const char* part : {"\n  branch 0:\n    while (predicate read", "\n      condition:\n", "\n      body:\n",
                           "\n  branch 1:\n", "\n  branch 2:\n"})
    EXPECT_TRUE(has(l.steps, part)) << part << "\n" << l.steps;
}

TEST(CudaControlFlowLoweringTest, ABoolConditionalOfTwoBranchesLowers) {
  const Shape s(DType::kF32, {32});
  const GpuLowering l = lowered_for_sm90(module({Shape(DType::kBool, {}), s, s}, [](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.get_tuple_element(branches(b, p[0], p[1], p[2], false), 0)};
  }));
  EXPECT_TRUE(has(l.steps, "conditional (2 branches, selector read to the host)")) << l.steps;
}

TEST(CudaControlFlowLoweringTest, AnOpWithoutAGpuKernelInABodyIsACompileErrorNamingIt) {
  const Shape s(DType::kF32, {2, 8, 8, 3});
  auto m = module({s}, [&](Builder& b, auto& p) {
    Computation* body = new_computation(b, "body");
    Builder bb(body);
    Instruction* x = bb.parameter(s, "x");
    Instruction* pooled = bb.reduce_window(x, ir::ReduceKind::kMean, {{1, 2, 2, 1}, {1, 1, 1, 1}, {0, 0, 0, 0}, {0, 1, 1, 0}});
    body->add_output(bb.binary(Opcode::kAdd, x, pooled));
    Computation* cond = new_computation(b, "cond");
    Builder cb(cond);
    cb.parameter(s, "x");
    cond->add_output(cb.scalar(0, DType::kBool));
    return std::vector<Instruction*>{b.get_tuple_element(b.while_loop({p[0]}, cond, body), 0)};
  });
  KILN_EXPECT_ERROR(lower_to_ptx(*m, 90), CompileError,
                    "[cuda] control: the cuda backend has no kernel yet for reduce_window (padding 0/1");
}

// On a GPU: the values of the reference evaluator.
void expect_gpu_matches_reference(runtime::Backend& gpu, std::unique_ptr<ir::Module> m, const std::vector<HostTensor>& args,
                                  const std::string& expected_step) {
  const std::vector<HostTensor> expected = ir::evaluate(*m, args);
  auto exe = gpu.compile(std::move(m), {});
  EXPECT_TRUE(has(exe->describe(), expected_step)) << exe->describe();
  std::vector<HostTensor> in = args;
  const std::vector<HostTensor> actual = exe->run(in);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    const std::vector<double> a = actual[k].to_vector<double>(), e = expected[k].to_vector<double>();
    ASSERT_EQ(a.size(), e.size());
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], e[i], 1e-5 * (1 + std::fabs(e[i]))) << "output " << k << " element " << i << "\n" << exe->describe();
  }
}

TEST(CudaControlFlowTest, WhileLoopsMatchTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  const Shape s(DType::kF32, {300});
  const std::vector<HostTensor> xw = {testing::random_tensor(s, 1), testing::random_tensor(s, 2)};
  for (bool tell : {false, true})
    expect_gpu_matches_reference(*gpu, module({s, s}, [&](Builder& b, auto& p) {
      Instruction* loop = counted_loop(b, p[0], p[1], 7, tell);
      return std::vector<Instruction*>{b.get_tuple_element(loop, 0), b.get_tuple_element(loop, 1), b.get_tuple_element(loop, 2)};
    }), xw, tell ? "while (trip_count 7" : "while (predicate read");
  // Data-dependent: sum(x) of 300 values in [0, 1) doubles past 1e5 after about 9 iterations.
  expect_gpu_matches_reference(*gpu, module({s}, [](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.get_tuple_element(doubling_loop(b, p[0], 1e5), 0)};
  }), {testing::random_tensor(s, 3, 0, 1)}, "while (predicate read");
  // A condition false from the start: the operands come back (copied, not aliased).
  expect_gpu_matches_reference(*gpu, module({s}, [](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.get_tuple_element(doubling_loop(b, p[0], -1e9), 0)};
  }), {testing::random_tensor(s, 4)}, "while (");
  const Shape h(DType::kF32, {4, 8}), w(DType::kF32, {8, 8});
  expect_gpu_matches_reference(*gpu, module({h, w}, [](Builder& b, auto& p) {
    Instruction* loop = recurrence(b, p[0], p[1], 5);
    return std::vector<Instruction*>{b.get_tuple_element(loop, 0), b.get_tuple_element(loop, 1)};
  }), {testing::random_tensor(h, 5), testing::random_tensor(w, 6)}, "matmul");
}

TEST(CudaControlFlowTest, AScanMatchesTheReferenceInPlaceOrCopied) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  const Shape s(DType::kF32, {9, 40});
  for (bool read_old_ys : {false, true})
    expect_gpu_matches_reference(*gpu, module({s, s}, [&](Builder& b, auto& p) {
      return std::vector<Instruction*>{b.get_tuple_element(testing::row_writing_loop(b, p[0], p[1], 0, read_old_ys), 0)};
    }), {testing::random_tensor(s, 1), testing::random_tensor(s, 2)}, "dynamic_update_slice kernel");
}

TEST(CudaControlFlowTest, ConditionalsPickTheReferencesBranchForEverySelector) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  const Shape s(DType::kF32, {50});
  const HostTensor x = testing::random_tensor(s, 1), w = testing::random_tensor(s, 2);
  // In range, and out of range both ways (the last branch, as XLA).
  for (int32_t selector : {0, 1, 2, -1, 3, 100})
    expect_gpu_matches_reference(*gpu, module({kCounter, s, s}, [](Builder& b, auto& p) {
      return std::vector<Instruction*>{b.get_tuple_element(branches(b, p[0], p[1], p[2], true), 0)};
    }), {HostTensor::from_vector<int32_t>({}, {selector}), x, w}, "conditional (3 branches");
  for (bool selector : {true, false})
    expect_gpu_matches_reference(*gpu, module({Shape(DType::kBool, {}), s, s}, [](Builder& b, auto& p) {
      return std::vector<Instruction*>{b.get_tuple_element(branches(b, p[0], p[1], p[2], false), 0)};
    }), {HostTensor::from_vector<bool>({}, {selector}), x, w}, "conditional (2 branches");
}

TEST(CudaControlFlowTest, ABodyThatChangesNothingWhileTheConditionHoldsIsAnError) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  const Shape s(DType::kF32, {8});
  auto m = module({s}, [&](Builder& b, auto& p) {
    Computation* body = new_computation(b, "body");
    Builder bb(body);
    body->add_output(bb.parameter(s, "x"));
    Computation* cond = new_computation(b, "cond");
    Builder cb(cond);
    Instruction* cx = cb.parameter(s, "x");
    cond->add_output(cb.compare(ir::Comparison::kLt, cb.reduce(Opcode::kReduceSum, cx, {0}), cb.scalar(1e9, DType::kF32)));
    return std::vector<Instruction*>{b.get_tuple_element(b.while_loop({p[0]}, cond, body), 0)};
  });
  auto exe = gpu->compile(std::move(m), {});
  std::vector<HostTensor> args = {testing::random_tensor(s, 1)};
  KILN_EXPECT_ERROR(exe->run(args), ValueError, "the loop body changes no value and the condition holds");
}

}  // namespace
}  // namespace kiln::cuda
