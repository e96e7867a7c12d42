// The oneDNN matmul adapter's 16-bit paths: oneDNN's bf16/f16 kernel where the CPU has one and
// f32 compute from 16-bit storage (tile by tile), each against products computed in f64 from
// the same 16-bit values; the per-shape choice between them is timed once and then reused
// from memory and from disk. Checks the mechanism, not which path is faster.
#include "kiln/runtime/cpu/onednn_matmul.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>

#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/runtime/cpu/contraction_decisions.h"
#include "tests/testing/backend_conformance.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/thread_ticks.h"

namespace kiln::cpu {
namespace {

using ir::Builder;
using ir::DotDims;
using ir::Instruction;
using Choice = MatmulOptions::Choice;

struct DotCase {
  std::string name;
  Dims lhs, rhs;
  DotDims dims;
};

// Each operand layout the widened path keeps (row-major, transposed), in one tile and in
// several (tiles of up to 1024 rows and columns, edge tiles smaller).
std::vector<DotCase> cases() {
  return {
      {"x W (forward)", {300, 70}, {70, 530}, {.lhs_contracting = {1}, .rhs_contracting = {0}}},
      {"dy W^T (input gradient)", {300, 530}, {70, 530}, {.lhs_contracting = {1}, .rhs_contracting = {1}}},
      {"x^T dy (weight gradient)", {300, 70}, {300, 530}, {.lhs_contracting = {0}, .rhs_contracting = {0}}},
      {"x W, several tiles", {1100, 24}, {24, 1040}, {.lhs_contracting = {1}, .rhs_contracting = {0}}},
      {"x^T W^T, several tiles", {24, 1100}, {1040, 24}, {.lhs_contracting = {0}, .rhs_contracting = {1}}},
      {"batched", {3, 20, 9}, {3, 9, 11}, {.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contracting = {2}, .rhs_contracting = {1}}},
  };
}

// out[b, m, n] = sum_k lhs . rhs in f64 over the 16-bit values, via the reference evaluator's
// dot in f64.
HostTensor f64_product(const DotCase& c, const HostTensor& l, const HostTensor& r) {
  ir::Module m("ref");
  Builder b(m.entry());
  Instruction* p0 = b.parameter(l.shape().with_dtype(DType::kF64), "l");
  Instruction* p1 = b.parameter(r.shape().with_dtype(DType::kF64), "r");
  m.entry()->set_outputs({b.dot_general(p0, p1, c.dims)});
  const std::vector<HostTensor> args{l.astype(DType::kF64), r.astype(DType::kF64)};
  return ir::evaluate(m, args)[0];
}

struct Built {
  ir::Module module{"m"};
  Instruction* dot = nullptr;
};

void build(Built& m, const DotCase& c, DType t) {
  Builder b(m.module.entry());
  m.dot = b.dot_general(b.parameter(Shape(t, c.lhs), "l"), b.parameter(Shape(t, c.rhs), "r"), c.dims);
}

// Runs the kernel `options` choose on random 16-bit operands; expects each element within a
// few 16-bit ulps of the f64 product (f32 accumulation, one rounding to 16 bits).
MatmulPath expect_right(const DotCase& c, DType t, const MatmulOptions& options) {
  Built m;
  build(m, c, t);
  std::unique_ptr<MatmulKernel> k = MatmulKernel::create(*m.dot, false, compiler::EpilogueActivation::kNone, options);
  EXPECT_NE(k, nullptr);
  if (k == nullptr) return MatmulPath::kF32;
  const HostTensor l = testing::random_tensor(Shape(t, c.lhs), 1), r = testing::random_tensor(Shape(t, c.rhs), 2);
  HostTensor out(m.dot->shape());
  k->run(l.raw_data(), r.raw_data(), nullptr, out.raw_data());
  const std::vector<double> got = out.to_vector<double>(), want = f64_product(c, l, r).to_vector<double>();
  const double ulp = t == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 2 * ulp * (1 + std::fabs(want[i]))) << c.name << " element " << i << " on " << k->isa();
    if (::testing::Test::HasFailure()) break;
  }
  return k->path();
}

TEST(OnednnMatmulTest, Bf16AndF16BothPathsMatchF64Products) {
  for (DType t : {DType::kBF16, DType::kF16})
    for (const DotCase& c : cases()) {
      SCOPED_TRACE(str_cat(c.name, " ", name(t)));
      // Forced f32 compute from 16-bit storage: always the widened path.
      EXPECT_EQ(expect_right(c, t, {.choice = Choice::kF32}), MatmulPath::kWidened);
      // Forced native: oneDNN's 16-bit kernel where it has one, else widened all the same.
      const MatmulPath native = expect_right(c, t, {.choice = Choice::kNative});
      EXPECT_NE(native, MatmulPath::kF32);
      std::printf("%s %s: native request runs %s\n", c.name.c_str(), std::string(name(t)).c_str(),
                  matmul_path_name(native));
    }
}

TEST(OnednnMatmulTest, BiasAndReluEpilogueOnBothPaths) {
  const Shape x(DType::kBF16, {260, 33}), w(DType::kBF16, {33, 515}), bias(DType::kBF16, {515});
  for (const char* force : {"native", "f32"}) {
    SCOPED_TRACE(force);
    auto backend_options = DebugOptions::global();
    backend_options.sixteen_bit_contractions = force;
    std::string steps;
    int kernels = 0;
    // A Keras mixed_bfloat16 Dense: relu(x W + b), all bf16, one kernel.
    testing::expect_matches_reference({x, w, bias}, [&](Builder& b, auto& p) {
      Instruction* y = b.dot_general(p[0], p[1], {.lhs_contracting = {1}, .rhs_contracting = {0}});
      y = b.binary(ir::Opcode::kAdd, y, b.broadcast_in_dim(p[2], y->shape().dims(), {1}));
      return std::vector<Instruction*>{b.binary(ir::Opcode::kMax, y, b.full(y->shape(), 0.0))};
    }, {.tol = 2e-2, .kernel_count = &kernels, .steps = &steps, .debug = &backend_options});
    EXPECT_EQ(kernels, 1) << steps;
    EXPECT_NE(steps.find("matmul+bias+relu"), std::string::npos) << steps;
    if (std::string(force) == "f32") {
      EXPECT_NE(steps.find("widened"), std::string::npos) << steps;
    }
  }
}

TEST(OnednnMatmulTest, TheTimedChoiceIsRecordedAndReusedFromMemoryAndDisk) {
  testing::TempDir dir;
  const MatmulOptions auto_choice{.choice = Choice::kAuto, .cache_dir = dir.path().string()};
  const DotCase c{"timed", {96, 40}, {40, 72}, {.lhs_contracting = {1}, .rhs_contracting = {0}}};
  ContractionDecisions& decisions = ContractionDecisions::instance();
  decisions.forget_in_memory();
  const ContractionDecisions::Stats before = decisions.stats();
  const MatmulPath first = expect_right(c, DType::kBF16, auto_choice);
  Built probe;
  build(probe, c, DType::kBF16);
  const bool has_native =
      MatmulKernel::create(*probe.dot, false, compiler::EpilogueActivation::kNone, {.choice = Choice::kNative})->path() ==
      MatmulPath::kNative;
  if (!has_native) {  // nothing to choose between: widened, and nothing timed
    EXPECT_EQ(first, MatmulPath::kWidened);
    EXPECT_EQ(decisions.stats().timed, before.timed);
    GTEST_SKIP() << "oneDNN has no bf16 matmul on this CPU; the widened path ran untimed";
  }
  EXPECT_EQ(decisions.stats().timed, before.timed + 1);
  EXPECT_FALSE(std::filesystem::is_empty(dir.path())) << "the choice is stored beside the kernels";
  // The same shape again: from memory, not timed again.
  EXPECT_EQ(expect_right(c, DType::kBF16, auto_choice), first);
  EXPECT_EQ(decisions.stats().timed, before.timed + 1);
  EXPECT_EQ(decisions.stats().memory_hits, before.memory_hits + 1);
  // A new process (in-memory table empty) reads the disk.
  decisions.forget_in_memory();
  EXPECT_EQ(expect_right(c, DType::kBF16, auto_choice), first);
  EXPECT_EQ(decisions.stats().timed, before.timed + 1);
  EXPECT_EQ(decisions.stats().disk_hits, before.disk_hits + 1);
  // Another shape is timed on its own.
  const DotCase other{"timed 2", {64, 40}, {40, 72}, {.lhs_contracting = {1}, .rhs_contracting = {0}}};
  expect_right(other, DType::kBF16, auto_choice);
  EXPECT_EQ(decisions.stats().timed, before.timed + 2);
}

// Like the convolutions (onednn_convolution_test.cpp), oneDNN's matmuls may fix their team size
// when the primitive is created (the gemm-based ones that AVX2 CPUs run do): a step the thread
// governor runs on one thread must run its matmuls on one (the other OpenMP thread idle), with
// the same results. Each team size gets its own primitive (onednn::TeamPrimitive).
TEST(OnednnMatmulTest, EachRunUsesTheTeamSizeOfThatRun) {
  if (!testing::idle_workers_sleep())
    GTEST_SKIP() << "OMP_WAIT_POLICY=active: idle OpenMP workers never stop spinning";
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  const std::vector<DotCase> all = cases();
  std::vector<Built> built(all.size());
  std::vector<std::unique_ptr<MatmulKernel>> kernels;
  std::vector<HostTensor> lhs, rhs;
  for (size_t k = 0; k < all.size(); ++k) {
    build(built[k], all[k], DType::kF32);
    kernels.push_back(MatmulKernel::create(*built[k].dot, false, compiler::EpilogueActivation::kNone, {}));
    ASSERT_NE(kernels.back(), nullptr) << all[k].name;
    lhs.push_back(testing::random_tensor(Shape(DType::kF32, all[k].lhs), 1));
    rhs.push_back(testing::random_tensor(Shape(DType::kF32, all[k].rhs), 2));
  }
  auto run_all = [&](std::vector<HostTensor>& outs) {
    outs.clear();
    for (size_t k = 0; k < all.size(); ++k) {
      outs.emplace_back(built[k].dot->shape());
      kernels[k]->run(lhs[k].raw_data(), rhs[k].raw_data(), nullptr, outs.back().raw_data());
    }
  };
  std::vector<HostTensor> two, one, scratch;
  auto run_again = [&] { run_all(scratch); };
  run_all(two);
  EXPECT_GT(testing::worker_ticks_while_running(run_again, 0.3), 5);  // on two threads a worker does about half
  omp_set_num_threads(1);
  run_all(one);
  EXPECT_LE(testing::worker_ticks_while_running(run_again, 0.3), 1);
  omp_set_num_threads(saved);
  for (size_t k = 0; k < all.size(); ++k) {
    const std::vector<float> a = one[k].to_vector<float>(), b = two[k].to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], 1e-4 * (1 + std::abs(b[i]))) << all[k].name << " element " << i;
  }
}

}  // namespace
}  // namespace kiln::cpu
