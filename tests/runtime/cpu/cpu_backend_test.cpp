// The CPU backend against the reference evaluator: every kernel path (fused loops, oneDNN
// matmul with epilogues, reductions, fallbacks) must agree with the oracle.
#include "kiln/runtime/cpu/cpu_backend.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <map>
#include <random>
#include <set>

#include "kiln/core/trace_recorder.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/thread_governor.h"
#include "tests/testing/backend_conformance.h"
#include "tests/testing/expect_error.h"

namespace kiln::cpu {
namespace {

using ir::Builder;
using ir::Instruction;
using ir::Opcode;

using testing::expect_matches_reference;

TEST(CpuBackendTest, FusedElementwiseChainWithBroadcastsMatchesReference) {
  Shape x(DType::kF32, {37, 129}), v(DType::kF32, {129}), r(DType::kF32, {37});
  expect_matches_reference({x, v, r}, [](Builder& b, auto& p) {
    auto* bv = b.broadcast_in_dim(p[1], {37, 129}, {1});
    auto* br = b.broadcast_in_dim(p[2], {37, 129}, {0});
    auto* y = b.binary(Opcode::kAdd, p[0], bv);
    auto* z = b.binary(Opcode::kMul, b.unary(Opcode::kExp, y), br);
    auto* relu = b.binary(Opcode::kMax, z, b.full(z->shape(), 0.0));
    auto* t = b.unary(Opcode::kTanh, b.binary(Opcode::kSub, relu, b.unary(Opcode::kLogistic, p[0])));
    return std::vector<Instruction*>{t};
  });
}

TEST(CpuBackendTest, TransposeSliceIotaCompareSelectConvert) {
  Shape x(DType::kF32, {6, 10});
  expect_matches_reference({x}, [](Builder& b, auto& p) {
    auto* t = b.transpose(p[0], {1, 0});
    auto* s = b.slice(t, {1, 0}, {9, 6}, {2, 1});
    auto* io = b.convert(b.iota(Shape(DType::kI32, {4, 6}), 1), DType::kF32);
    auto* pred = b.compare(ir::Comparison::kGt, s, b.full(s->shape(), 0.0));
    auto* sel = b.select(pred, s, io);
    auto* as_int = b.convert(b.binary(Opcode::kMul, sel, b.full(sel->shape(), 10.0)), DType::kI32);
    return std::vector<Instruction*>{sel, as_int};
  });
}

TEST(CpuBackendTest, MatmulInEveryOperandLayout) {
  Shape a(DType::kF32, {33, 65}), w(DType::kF32, {65, 17}), at(DType::kF32, {65, 33}), wt(DType::kF32, {17, 65});
  expect_matches_reference({a, w, at, wt}, [](Builder& b, auto& p) {
    auto* nn = b.dot_general(p[0], p[1], {.lhs_contracting = {1}, .rhs_contracting = {0}});
    auto* tn = b.dot_general(p[2], p[1], {.lhs_contracting = {0}, .rhs_contracting = {0}});
    auto* nt = b.dot_general(p[0], p[3], {.lhs_contracting = {1}, .rhs_contracting = {1}});
    return std::vector<Instruction*>{nn, tn, nt};
  }, {.tol = 1e-4});
}

TEST(CpuBackendTest, BatchedAndRank3Matmul) {
  Shape l(DType::kF32, {4, 5, 6}), r(DType::kF32, {4, 6, 3}), w(DType::kF32, {6, 7});
  expect_matches_reference({l, r, w}, [](Builder& b, auto& p) {
    auto* bmm = b.dot_general(p[0], p[1], {.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contracting = {2},
                                          .rhs_contracting = {1}});
    auto* dense3 = b.dot_general(p[0], p[2], {.lhs_contracting = {2}, .rhs_contracting = {0}});
    return std::vector<Instruction*>{bmm, dense3};
  }, {.tol = 1e-4});
}

TEST(CpuBackendTest, DenseBiasReluBecomesOneMatmulCall) {
  Shape x(DType::kF32, {128, 784}), w(DType::kF32, {784, 128}), bias(DType::kF32, {128});
  int kernels = 0;
  expect_matches_reference({x, w, bias}, [](Builder& b, auto& p) {
    auto* d = b.dot_general(p[0], p[1], {.lhs_contracting = {1}, .rhs_contracting = {0}});
    auto* y = b.binary(Opcode::kAdd, d, b.broadcast_in_dim(p[2], {128, 128}, {1}));
    return std::vector<Instruction*>{b.binary(Opcode::kMax, y, b.full(y->shape(), 0.0))};
  }, {.tol = 1e-4, .kernel_count = &kernels});
  EXPECT_EQ(kernels, 1);
}

TEST(CpuBackendTest, Bf16MatmulAndElementwise) {
  Shape a(DType::kBF16, {16, 32}), w(DType::kBF16, {32, 8});
  expect_matches_reference({a, w}, [](Builder& b, auto& p) {
    auto* d = b.dot_general(p[0], p[1], {.lhs_contracting = {1}, .rhs_contracting = {0}});
    return std::vector<Instruction*>{b.unary(Opcode::kExp, d)};
  }, {.tol = 2e-2});
}

TEST(CpuBackendTest, ReductionsOverEveryAxisCombination) {
  Shape x(DType::kF32, {5, 7, 9});
  const std::vector<Dims> axes_sets = {{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};
  for (Opcode op : {Opcode::kReduceSum, Opcode::kReduceMax, Opcode::kReduceMin})
    for (const Dims& axes : axes_sets) {
      SCOPED_TRACE(str_cat(ir::opcode_name(op), " axes ", dims_to_string(axes)));
      expect_matches_reference({x}, [&](Builder& b, auto& p) {
        auto* e = b.unary(Opcode::kExp, p[0]);  // a producer to fuse into the reduction
        return std::vector<Instruction*>{b.reduce(op, e, axes), b.reduce(op, p[0], axes)};
      });
    }
}

// Rows shorter than half a block are read a block of rows at a time (a softmax's [batch,
// classes]); row counts that do not fill the last block, one-element rows, and rows just past
// the limit (the row-by-row path) must all match the reference, on one thread and on two alike.
TEST(CpuBackendTest, ShortRowReductionsMatchTheReferenceOnAnyThreadCount) {
  const int saved = omp_get_max_threads();
  for (const Dims& dims : std::vector<Dims>{{300, 10}, {1000, 3}, {5, 1}, {70000, 2}, {9, 513}})
    for (int threads : {1, 2})
      for (Opcode op : {Opcode::kReduceSum, Opcode::kReduceMax}) {
        SCOPED_TRACE(str_cat(ir::opcode_name(op), " ", dims_to_string(dims), " on ", threads, " threads"));
        omp_set_num_threads(threads);
        expect_matches_reference({Shape(DType::kF32, dims)}, [&](Builder& b, auto& p) {
          auto* e = b.unary(Opcode::kExp, p[0]);
          return std::vector<Instruction*>{b.reduce(op, e, {1}), b.reduce(op, p[0], {1})};
        });
      }
  omp_set_num_threads(saved);
}

TEST(CpuBackendTest, ArgmaxGatherPadAndConcatenate) {
  // Verify that pad (negative padding crops) and concatenate run on kernels of their own.
  Shape x(DType::kF32, {8, 10}), table(DType::kF32, {20, 4}), cube(DType::kBF16, {3, 4, 5});
  std::string steps;
  expect_matches_reference({x, table, cube}, [](Builder& b, auto& p) {
    auto* am = b.argmax(p[0], 1);
    auto* g = b.gather(p[1], am, 0);
    auto* padded = b.pad(p[0], {1, 0}, {0, 2}, 0.5);
    auto* cropped = b.pad(p[2], {-1, 2, 0}, {1, -3, 1}, -2.0);
    auto* cat = b.concatenate({p[0], p[0]}, 0);
    return std::vector<Instruction*>{am, g, padded, cropped, cat};
  }, {.steps = &steps});
  EXPECT_EQ(steps.find("reference"), std::string::npos) << steps;
}

TEST(CpuBackendTest, EmptyIntegerMaxAndMinGiveTheIntegerIdentity) {
  // Verify that reducing an empty axis of integers gives lowest/max as the reference does
  // (the f32 accumulator's -inf/+inf used to be cast to an integer: undefined, INT_MIN here).
  for (DType t : {DType::kI32, DType::kI64, DType::kU8, DType::kBool}) {
    SCOPED_TRACE(str_cat(t));
    expect_matches_reference({Shape(t, {0, 3})}, [](Builder& b, auto& p) {
      return std::vector<Instruction*>{b.reduce(Opcode::kReduceMax, p[0], {0}), b.reduce(Opcode::kReduceMin, p[0], {0})};
    });
  }
}

TEST(CpuBackendTest, ReferenceFallbacksAreCountedAndWarnedOncePerOp) {
  // Verify that a step without a fast kernel is not silent: each compile counts it, and the
  // backend warns at the default log level the first time it falls back on an op.
  std::unique_ptr<runtime::Backend> cpu = make_cpu_backend();
  auto make = [] {  // oneDNN has no f64 matmul
    auto m = std::make_unique<ir::Module>("f64_matmul");
    Builder b(m->entry());
    auto* x = b.parameter(Shape(DType::kF64, {2, 3}), "x");
    auto* w = b.parameter(Shape(DType::kF64, {3, 4}), "w");
    m->entry()->set_outputs({b.dot_general(x, w, {.lhs_contracting = {1}, .rhs_contracting = {0}}),
                             b.unary(Opcode::kExp, x)});
    return m;
  };
  ::testing::internal::CaptureStderr();
  std::unique_ptr<runtime::Executable> first = cpu->compile(make(), {});
  std::unique_ptr<runtime::Executable> second = cpu->compile(make(), {});
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(first->reference_fallbacks(), std::vector<std::string>{"dot_general"});
  EXPECT_EQ(cpu->reference_fallback_counts(), (std::map<std::string, int64_t>{{"dot_general", 2}}));
  const std::string warning = "kiln warning: [cpu] no fast kernel for dot_general: ";
  ASSERT_NE(warnings.find(warning), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find(warning, warnings.find(warning) + 1), std::string::npos) << "warned twice:\n" << warnings;
  // The reference backend is the evaluator itself: nothing there is a fallback.
  EXPECT_TRUE(runtime::make_backend("reference")->compile(make(), {})->reference_fallbacks().empty());
}

TEST(CpuBackendTest, IntegerDivisionByZeroHasAllBitsSetOnBothLoopEngines) {
  // Verify that x / 0 is -1 (255 for u8) as the IR defines it, not 0, interpreted or generated.
  for (LoopEngine engine : {LoopEngine::kInterpreter, LoopEngine::kGenerated})
    for (DType t : {DType::kI32, DType::kI64, DType::kU8}) {
      SCOPED_TRACE(str_cat(t, engine == LoopEngine::kGenerated ? " generated" : " interpreted"));
      std::unique_ptr<runtime::Backend> cpu = make_cpu_backend(0, engine);
      expect_matches_reference({Shape(t, {2, 9})}, [](Builder& b, auto& p) {
        return std::vector<Instruction*>{b.binary(Opcode::kDiv, p[0], b.full(p[0]->shape(), 0.0)),
                                         b.binary(Opcode::kDiv, b.full(p[0]->shape(), 7.0), p[0])};
      }, {.backend = cpu.get()});
    }
}

TEST(CpuBackendTest, ConcatenateOfManyOperandsIsACopyKernel) {
  // Verify that concatenate has a kernel of its own, for any number of operands (more than 16
  // used to be an InternalError, on the reference fallback too).
  std::vector<Shape> parts(20, Shape(DType::kF32, {3, 2, 4}));
  parts[7] = Shape(DType::kF32, {3, 0, 4});
  std::string steps;
  expect_matches_reference(parts, [](Builder& b, auto& p) {
    return std::vector<Instruction*>{b.concatenate(p, 1), b.concatenate({p[0], p[1]}, 2)};
  }, {.steps = &steps});
  EXPECT_EQ(steps.find("reference"), std::string::npos) << steps;
}

TEST(CpuBackendTest, GatherScatterAddAndRngBitsRunOnTheirOwnKernels) {
  Shape table(DType::kF32, {3, 20, 5}), picks(DType::kF32, {4, 6});
  std::string steps;
  expect_matches_reference({table, picks}, [](Builder& b, auto& p) {
    // Indices in [-30, 30]: out-of-range ones clamp; duplicates accumulate in scatter_add.
    auto* ids = b.convert(b.binary(Opcode::kMul, p[1], b.full(p[1]->shape(), 30.0)), DType::kI32);
    auto* g = b.gather(p[0], ids, 1);  // f32[3,4,6,5]
    auto* grads = b.unary(Opcode::kTanh, g);
    auto* sa = b.scatter_add(p[0], ids, grads, 1);
    auto* bits = b.rng_bits(b.scalar(12345, DType::kI64), {7, 9});
    return std::vector<Instruction*>{g, sa, bits};
  }, {.tol = 1e-5, .steps = &steps});
  EXPECT_EQ(steps.find("reference"), std::string::npos) << steps;
}

TEST(CpuBackendTest, AliasedOutputUpdatesTheArgumentInPlace) {
  auto m = std::make_unique<ir::Module>("sgd");
  Builder b(m->entry());
  auto* w = b.parameter(Shape(DType::kF32, {1000}), "w");
  auto* g = b.parameter(Shape(DType::kF32, {1000}), "g");
  auto* nw = b.binary(Opcode::kSub, w, b.binary(Opcode::kMul, g, b.full(g->shape(), 0.5)));
  m->entry()->set_outputs({nw, b.reduce(Opcode::kReduceSum, nw, {0})});
  m->add_alias({0, 0});
  auto exe = make_cpu_backend()->compile(std::move(m), {});
  std::vector<HostTensor> args = {HostTensor::from_vector<float>({1000}, std::vector<float>(1000, 1.0f)),
                                  HostTensor::from_vector<float>({1000}, std::vector<float>(1000, 2.0f))};
  const void* storage = args[0].raw_data();
  auto out = exe->run(args);
  EXPECT_EQ(out[0].raw_data(), storage);
  EXPECT_EQ(args[0].data<float>()[999], 0.0f);
  EXPECT_EQ(out[1].data<float>()[0], 0.0f);
  exe->run(args);
  EXPECT_EQ(args[0].data<float>()[0], -1.0f);
}

// A mixed-precision Dense as Keras builds it: relu(bf16(x) bf16(W) + bf16(b)) of f32 x, W, b,
// and the weight gradient bf16(x)^T dy. Where bf16 matmuls are widened (forced here, as on a
// CPU without bf16 kernels) they read the f32 parameters and round them as they widen: the
// converts run no step, and the results are the bits of the converts-then-widen path (made
// here by also returning bf16(x), which keeps that convert a value of its own).
TEST(CpuBackendTest, ConvertsOfF32ParametersFoldIntoWidenedBf16Matmuls) {
  const Shape x(DType::kF32, {130, 70}), w(DType::kF32, {70, 90}), bias(DType::kF32, {90}), dy(DType::kBF16, {130, 90});
  auto build = [&](bool keep_convert) {
    auto m = std::make_unique<ir::Module>("dense");
    Builder b(m->entry());
    Instruction* px = b.parameter(x, "x");
    Instruction* pw = b.parameter(w, "w");
    Instruction* pb = b.parameter(bias, "b");
    Instruction* pdy = b.parameter(dy, "dy");
    Instruction* xb = b.convert(px, DType::kBF16);
    Instruction* y = b.dot_general(xb, b.convert(pw, DType::kBF16), {.lhs_contracting = {1}, .rhs_contracting = {0}});
    y = b.binary(Opcode::kAdd, y, b.broadcast_in_dim(b.convert(pb, DType::kBF16), y->shape().dims(), {1}));
    y = b.binary(Opcode::kMax, y, b.full(y->shape(), 0.0));
    Instruction* dw = b.dot_general(xb, pdy, {.lhs_contracting = {0}, .rhs_contracting = {0}});
    std::vector<Instruction*> outs{y, dw};
    if (keep_convert) outs.push_back(xb);
    m->entry()->set_outputs(outs);
    return m;
  };
  runtime::CompileOptions options;
  options.debug.sixteen_bit_contractions = "f32";
  std::unique_ptr<runtime::Backend> cpu = make_cpu_backend();
  auto folded = cpu->compile(build(false), options);
  auto kept = cpu->compile(build(true), options);
  const std::string steps = folded->describe();
  EXPECT_EQ(folded->kernel_count(), 2) << steps;  // the two matmuls, no convert
  EXPECT_NE(steps.find("matmul+bias+relu ("), std::string::npos) << steps;
  EXPECT_NE(steps.find(", widened) reading f32 operands"), std::string::npos) << steps;
  EXPECT_NE(kept->describe().find("convert"), std::string::npos) << kept->describe();
  std::vector<HostTensor> args;
  for (const Shape& s : {x, w, bias, dy}) args.push_back(testing::random_tensor(s, static_cast<uint32_t>(args.size() + 1)));
  const std::vector<HostTensor> a = folded->run(args), k = kept->run(args), want = ir::evaluate(*build(false), args);
  for (size_t o = 0; o < 2; ++o) {
    ASSERT_EQ(a[o].byte_size(), k[o].byte_size());
    EXPECT_EQ(std::memcmp(a[o].raw_data(), k[o].raw_data(), static_cast<size_t>(a[o].byte_size())), 0) << "output " << o;
    const std::vector<double> got = a[o].to_vector<double>(), ref = want[o].to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], 2e-2 * (1 + std::fabs(ref[i]))) << "output " << o << " at " << i;
  }
}

// A variable update written into its parameter's buffer before a matmul of that parameter's
// convert runs (the matmul needs a value computed from the update): the convert cannot be
// folded, as the matmul would read the updated values.
TEST(CpuBackendTest, AConvertIsNotFoldedIntoAMatmulAfterItsVariablesUpdate) {
  auto build = [] {
    auto m = std::make_unique<ir::Module>("step");
    Builder b(m->entry());
    Instruction* w = b.parameter(Shape(DType::kF32, {64, 48}), "w");
    Instruction* x = b.parameter(Shape(DType::kBF16, {32, 64}), "x");
    Instruction* nw = b.binary(Opcode::kSub, w, b.full(w->shape(), 0.25));
    // x + 0 * sum(nw): the matmul comes after the update
    Instruction* zero = b.convert(b.binary(Opcode::kMul, b.reduce(Opcode::kReduceSum, nw, {0, 1}), b.full(Shape(DType::kF32, {}), 0.0)),
                                  DType::kBF16);
    Instruction* xs = b.binary(Opcode::kAdd, x, b.broadcast_in_dim(zero, {32, 64}, {}));
    // w's convert first in the order (the lhs), so the update may be written in place.
    Instruction* y = b.dot_general(b.convert(w, DType::kBF16), xs, {.lhs_contracting = {0}, .rhs_contracting = {1}});
    m->entry()->set_outputs({y, nw});
    m->add_alias({1, 0});
    return m;
  };
  runtime::CompileOptions options;
  options.debug.sixteen_bit_contractions = "f32";
  auto exe = make_cpu_backend()->compile(build(), options);
  std::vector<HostTensor> args{testing::random_tensor(Shape(DType::kF32, {64, 48}), 1),
                               testing::random_tensor(Shape(DType::kBF16, {32, 64}), 2)};
  const std::vector<HostTensor> want = ir::evaluate(*build(), args);
  const void* w_storage = args[0].raw_data();
  const std::vector<HostTensor> got = exe->run(args);
  EXPECT_EQ(got[1].raw_data(), w_storage) << "the update is written in place\n" << exe->describe();
  EXPECT_EQ(exe->describe().find("reading f32 operands"), std::string::npos) << exe->describe();
  const std::vector<double> g = got[0].to_vector<double>(), r = want[0].to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], r[i], 2e-2 * (1 + std::fabs(r[i]))) << exe->describe();
}

TEST(CpuBackendTest, AGovernedExecutableGivesTheSameResultsAndRestoresTheThreadCount) {
  // The governor probes fewer threads after its first timing window (runtime/cpu/
  // thread_governor.h), so these runs use both team sizes; a matmul, a reduction and a fused
  // loop must not change, and the caller's OpenMP thread count must come back after each run.
  auto make = [] {
    auto m = std::make_unique<ir::Module>("governed");
    Builder b(m->entry());
    auto* x = b.parameter(Shape(DType::kF32, {96, 200}), "x");
    auto* w = b.parameter(Shape(DType::kF32, {200, 64}), "w");
    auto* y = b.unary(Opcode::kTanh, b.dot_general(x, w, {.lhs_contracting = {1}, .rhs_contracting = {0}}));
    m->entry()->set_outputs({y, b.reduce(Opcode::kReduceSum, y, {0})});
    return m;
  };
  runtime::CompileOptions governed_options;
  governed_options.debug.thread_governor = true;
  auto governed = make_cpu_backend()->compile(make(), governed_options);
  runtime::CompileOptions plain_options;
  plain_options.debug.thread_governor = false;
  auto plain = make_cpu_backend()->compile(make(), plain_options);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> xs(96 * 200), ws(200 * 64);
  for (float& v : xs) v = u(rng);
  for (float& v : ws) v = u(rng);
  std::vector<HostTensor> args = {HostTensor::from_vector<float>({96, 200}, xs),
                                  HostTensor::from_vector<float>({200, 64}, ws)};
  EXPECT_EQ(plain->last_run_threads(), 0);  // not run yet
  const std::vector<HostTensor> expected = plain->run(args);
  const int threads = omp_get_max_threads();
  EXPECT_EQ(plain->last_run_threads(), threads);
  std::set<int> team_sizes;  // what the governed runs report using
  for (int run = 0; run < 3 * ThreadGovernor::kWindow; ++run) {
    std::vector<HostTensor> out = governed->run(args);
    team_sizes.insert(governed->last_run_threads());
    ASSERT_EQ(omp_get_max_threads(), threads) << "run " << run;
    for (size_t k = 0; k < out.size(); ++k)
      ASSERT_EQ(std::memcmp(out[k].raw_data(), expected[k].raw_data(), static_cast<size_t>(out[k].byte_size())), 0)
          << "output " << k << ", run " << run;
  }
  // The first window runs the full team; the probe after it runs one thread fewer.
  EXPECT_TRUE(team_sizes.contains(threads));
  if (threads > 1) {
    EXPECT_TRUE(team_sizes.contains(threads - 1));
  }
}

TEST(CpuBackendTest, TracedTeamStepsRecordEachMemberOnEveryTeamThread) {
  // exp, a row sum and a subtraction over 64K elements: loop, reduction and loop kernels that
  // share one OpenMP team (team_impl.h), on every thread OpenMP offers.
  auto m = std::make_unique<ir::Module>("teamed");
  Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF32, {256, 256}), "x");
  auto* e = b.unary(Opcode::kExp, x);
  auto* s = b.reduce(Opcode::kReduceSum, e, {1});
  auto* d = b.binary(Opcode::kSub, e, b.broadcast_in_dim(s, {256, 256}, {0}));
  m->entry()->set_outputs({d, b.reduce(Opcode::kReduceSum, d, {0})});
  runtime::CompileOptions options;
  options.debug.thread_governor = false;
  auto exe = make_cpu_backend()->compile(std::move(m), options);
  ASSERT_NE(exe->describe().find("team("), std::string::npos) << exe->describe();
  std::vector<HostTensor> args = {HostTensor::from_vector<float>({256, 256}, std::vector<float>(256 * 256, 0.5f))};
  std::vector<TraceEvent> events;
  {
    TraceSession session;
    exe->run(args);
    events = session.recorder().events();
  }
  // Each team step: its members ("team" events inside its span) on every team thread, the
  // same count on each.
  const int threads = omp_get_max_threads();
  int teams = 0;
  for (const TraceEvent& team : events) {
    if (team.category != "kernel" || !team.name.starts_with("team(")) continue;
    ++teams;
    const int members = std::stoi(team.name.substr(5));  // "team(<n> kernels: ...)"
    std::map<int, int> per_thread;
    for (const TraceEvent& part : events)
      if (part.category == "team" && part.start_ns >= team.start_ns &&
          part.start_ns + part.duration_ns <= team.start_ns + team.duration_ns)
        ++per_thread[part.tid];
    EXPECT_EQ(static_cast<int>(per_thread.size()), threads) << team.name;
    for (const auto& [tid, count] : per_thread) EXPECT_EQ(count, members) << team.name << " thread " << tid;
  }
  EXPECT_GT(teams, 0);
}

TEST(CpuBackendTest, ArgumentShapeMismatchNamesTheParameter) {
  auto m = std::make_unique<ir::Module>("step");
  Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF32, {4}), "images");
  m->entry()->add_output(b.unary(Opcode::kNeg, x));
  auto exe = make_cpu_backend()->compile(std::move(m), {});
  std::vector<HostTensor> args = {HostTensor(Shape(DType::kF32, {5}))};
  KILN_EXPECT_ERROR(exe->run(args), ShapeError, "argument 0 'images' must be f32[4], received f32[5]");
}

TEST(CpuBackendTest, StepTooLargeForTheDeviceIsAnOutOfMemoryErrorBeforeRunning) {
  auto m = std::make_unique<ir::Module>("big_step");
  Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF32, {1024, 1024}), "x");
  auto* y = b.unary(Opcode::kExp, x);
  auto* z = b.binary(Opcode::kAdd, y, b.unary(Opcode::kTanh, x));
  m->entry()->add_output(b.reduce(Opcode::kReduceSum, b.binary(Opcode::kMul, z, y), {1}));
  auto backend = make_cpu_backend(/*memory_limit=*/2 << 20);  // less than the 4 MiB input
  KILN_EXPECT_ERROR(backend->compile(std::move(m), {.label = "train_step"}), OutOfMemoryError,
                    "[train_step] the step needs");
  auto m2 = std::make_unique<ir::Module>("big_step");
  Builder b2(m2->entry());
  auto* x2 = b2.parameter(Shape(DType::kF32, {1024, 1024}), "x");
  m2->entry()->add_output(b2.unary(Opcode::kExp, x2));
  KILN_EXPECT_ERROR(backend->compile(std::move(m2), {}), OutOfMemoryError, "largest batch size that fits is about");
}

// The out-of-memory hint offers the mixed_bfloat16 policy (issue 16) with what it would save
// in this step: the arena re-planned with its f32 values at 2 bytes. Two f32[1024, 1024]
// matmul results live at once (8 MiB), 4 MiB at 16 bits.
TEST(CpuBackendTest, OutOfMemoryHintSaysWhatTheMixedPolicyWouldSave) {
  auto m = std::make_unique<ir::Module>("big_step");
  Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF32, {1024, 1024}), "x");
  const ir::DotDims mm{.lhs_contracting = {1}, .rhs_contracting = {0}};
  auto* h = b.dot_general(x, x, mm);
  auto* g = b.dot_general(h, x, mm);
  m->entry()->add_output(b.reduce(Opcode::kReduceSum, b.binary(Opcode::kAdd, g, h), {1}));
  KILN_EXPECT_ERROR(make_cpu_backend(/*memory_limit=*/2 << 20)->compile(std::move(m), {}), OutOfMemoryError,
                    "or train under the mixed_bfloat16 policy (keras::mixed_precision::set_global_policy("
                    "\"mixed_bfloat16\")), which would save about 4 MiB of activations in this step");
}

// The policy hint appears only where it would save something: here the step's only value is an
// output, not an activation. (make_backend("cuda")'s errors: tests/runtime/gpus_test.cpp.)
TEST(CpuBackendTest, HintsNameNoFeatureThatIsNotBuilt) {
  auto m = std::make_unique<ir::Module>("big_step");
  Builder b(m->entry());
  m->entry()->add_output(b.unary(Opcode::kExp, b.parameter(Shape(DType::kF32, {1024, 1024}), "x")));
  try {
    make_cpu_backend(/*memory_limit=*/2 << 20)->compile(std::move(m), {});
    ADD_FAILURE() << "expected an OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(std::string(e.what()).find("mixed_bfloat16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::cpu
