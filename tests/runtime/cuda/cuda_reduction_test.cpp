// The GPU reductions: which kernel layout the lowering picks for a geometry (checked without a
// GPU through the step labels), and on a GPU every op x dtype x geometry against the reference
// evaluator. Tolerance story: sums accumulate in the register type as before (f32; f64 for
// f64 and i32 inputs) but in a tree order, so a sum may differ from the reference's by the
// rounding of a different order: within 1e-5 * (1 + sum |x|) of the row, plus the output
// dtype's rounding of the result. max, min and argmax select elements: they must be exact,
// argmax the FIRST maximum (inputs with many ties) and NaN as the reference treats it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/ir/builder.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/cuda/reduction_plan.h"
#include "tests/testing/backend_conformance.h"
#include "tests/testing/gpu_backend.h"

namespace kiln::cuda {
namespace {

using ir::Builder;
using ir::Instruction;
using ir::Opcode;

// The steps of a module holding `build`'s reductions of an f32 parameter of `dims`, lowered
// for sm_90 without a GPU.
std::string lowered_steps(const Dims& dims, const std::function<Instruction*(Builder&, Instruction*)>& build) {
  auto m = std::make_unique<ir::Module>("reductions");
  Builder b(m->entry());
  m->entry()->set_outputs({build(b, b.parameter(Shape(DType::kF32, dims), "x"))});
  return lower_without_gpu(*m, 90).steps;
}

TEST(CudaReductionTest, LoweringPicksTheLayoutByGeometry) {
  auto sum = [](const Dims& axes) {
    return [axes](Builder& b, Instruction* x) { return b.reduce(Opcode::kReduceSum, x, axes); };
  };
  const struct {
    Dims dims;
    Dims axes;
    const char* label;
  } cases[] = {
      {{4096, 10}, {1}, "(4096x10x1, thread per result)"},            // softmax's rows: shorter than a warp
      {{8, 100000}, {1}, "(8x100000x1, block of 1024 per result)"},   // few long rows
      {{300, 2000}, {1}, "(300x2000x1, block of 256 per result)"},
      {{4096, 1000}, {1}, "(4096x1000x1, block of 32 per result)"},   // a warp per row
      {{86528, 32}, {0}, "(1x86528x32, column tiles of 32x32)"},       // the convnet's bias gradient
      {{1000, 64, 64}, {1}, "(1000x64x64, column tiles of 32x8)"},
      {{4, 100, 65536}, {1}, "(4x100x65536, thread per result)"},     // enough coalesced threads
      {{6, 1000, 5}, {1}, "(6x1000x5, block of 32 per result)"},
      {{0, 1000}, {1}, "(0x1000x1, "},
  };
  for (const auto& c : cases) {
    const std::string steps = lowered_steps(c.dims, sum(c.axes));
    EXPECT_NE(steps.find(c.label), std::string::npos) << c.label << "\n" << steps;
  }
  const std::string argmax = lowered_steps({16, 1000}, [](Builder& b, Instruction* x) { return b.argmax(x, 1); });
  EXPECT_NE(argmax.find("argmax kernel r1 (16x1000x1, block of 32 per result)"), std::string::npos) << argmax;
}

TEST(CudaReductionTest, AxesThatAreNotConsecutiveAreTransposedFirst) {
  const std::string steps = lowered_steps({6, 7, 8}, [](Builder& b, Instruction* x) {
    return b.reduce(Opcode::kReduceMax, x, {0, 2});
  });
  const size_t transpose = steps.find("loop kernel k1_transpose_s0 (336 elements)");
  const size_t reduce = steps.find("reduce_max kernel r1 (7x48x1, block of 32 per result)");
  EXPECT_NE(transpose, std::string::npos) << steps;
  EXPECT_NE(reduce, std::string::npos) << steps;
  EXPECT_LT(transpose, reduce) << steps;
}

TEST(CudaReductionTest, GridsBeyondCudasLimitAreACompileError) {
  try {
    ReductionPlan::choose(int64_t{1} << 36, 40, 32);
    ADD_FAILURE() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("more than CUDA's 2^31 - 1"), std::string::npos) << e.what();
  }
}

// [outer, r, inner] reduced over r.
struct Geometry {
  int64_t outer, r, inner;
};

// Inputs with many ties (integers in [-4, 4], so argmax must find the first maximum), and for
// float dtypes a NaN in every 7th row (max/min propagate it, argmax points at it).
HostTensor reduction_input(const Geometry& g, DType dtype, uint32_t seed) {
  HostTensor t = testing::random_tensor(Shape(DType::kF64, {g.outer, g.r, g.inner}), seed, -4.0, 5.0);
  std::span<double> v = t.data<double>();
  for (double& x : v) x = std::floor(x);
  if (is_floating(dtype))
    for (int64_t o = 0; o < g.outer; o += 7)
      if (g.r > 0 && g.inner > 0) v[static_cast<size_t>((o * g.r + g.r / 2) * g.inner)] = std::numeric_limits<double>::quiet_NaN();
  return t.astype(dtype);
}

// sum_j |x[o, j, i]| per result, for the sum's tolerance.
std::vector<double> abs_sums(const HostTensor& x, const Geometry& g) {
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> s(static_cast<size_t>(g.outer * g.inner), 0.0);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t j = 0; j < g.r; ++j)
      for (int64_t i = 0; i < g.inner; ++i)
        if (!std::isnan(v[static_cast<size_t>((o * g.r + j) * g.inner + i)]))
          s[static_cast<size_t>(o * g.inner + i)] += std::fabs(v[static_cast<size_t>((o * g.r + j) * g.inner + i)]);
  return s;
}

double output_epsilon(DType dtype) {
  switch (dtype) {
    case DType::kBF16: return 1.0 / 128;
    case DType::kF16: return 1.0 / 1024;
    default: return 0.0;
  }
}

TEST(CudaReductionTest, EveryOpDtypeAndGeometryMatchesTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  // Every r of the issue, with inner 1 and > 1 (each layout: thread per result, blocks of 32,
  // 256 and 1024, column tiles 32x32 and 32x8), a small inner, and empty results and rows.
  const std::vector<Geometry> geometries = {
      {3, 1, 1},    {3, 31, 1},   {5, 32, 1},   {5, 33, 1},   {7, 1000, 1}, {2, 100000, 1}, {300, 2000, 1},
      {3, 1, 40},   {3, 31, 40},  {5, 32, 40},  {5, 33, 40},  {7, 1000, 40}, {1, 100000, 40}, {2048, 33, 40},
      {300, 64, 40}, {6, 1000, 5}, {0, 10, 3},   {4, 0, 1},    {4, 0, 40},
  };
  const Opcode ops[] = {Opcode::kReduceSum, Opcode::kReduceMax, Opcode::kReduceMin, Opcode::kArgmax};
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kI32}) {
    auto m = std::make_unique<ir::Module>(str_cat("reductions_", name(dtype)));
    Builder b(m->entry());
    std::vector<Instruction*> outputs;
    std::vector<HostTensor> args;
    for (size_t k = 0; k < geometries.size(); ++k) {
      const Geometry& g = geometries[k];
      Instruction* x = b.parameter(Shape(dtype, {g.outer, g.r, g.inner}), str_cat("x", k));
      args.push_back(reduction_input(g, dtype, static_cast<uint32_t>(k + 1)));
      for (Opcode op : ops) outputs.push_back(op == Opcode::kArgmax ? b.argmax(x, 1) : b.reduce(op, x, {1}));
    }
    m->entry()->set_outputs(outputs);
    const std::vector<HostTensor> expected = ir::evaluate(*m, args);
    auto exe = backend->compile(std::move(m), {});
    const std::vector<HostTensor> actual = exe->run(args);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t k = 0; k < geometries.size(); ++k) {
      const Geometry& g = geometries[k];
      const std::vector<double> sums = abs_sums(args[k], g);
      for (size_t o = 0; o < std::size(ops); ++o) {
        const size_t out = k * std::size(ops) + o;
        const bool empty_extreme = g.r == 0 && (ops[o] == Opcode::kReduceMax || ops[o] == Opcode::kReduceMin);
        if (empty_extreme && !is_floating(dtype)) continue;  // +-inf has no i32 value to compare
        const std::vector<double> a = actual[out].to_vector<double>(), e = expected[out].to_vector<double>();
        ASSERT_EQ(a.size(), e.size());
        for (size_t i = 0; i < a.size(); ++i) {
          if (a[i] == e[i] || (std::isnan(a[i]) && std::isnan(e[i]))) continue;
          const double tol = ops[o] == Opcode::kReduceSum ? 1e-5 * (1 + sums[i]) + output_epsilon(dtype) * std::fabs(e[i]) : 0.0;
          ASSERT_NEAR(a[i], e[i], tol) << ir::opcode_name(ops[o]) << " " << name(dtype) << " [" << g.outer << ", " << g.r
                                       << ", " << g.inner << "] result " << i << "\n" << exe->describe();
        }
      }
    }
  }
}

TEST(CudaReductionTest, AxesThatAreNotConsecutiveMatchTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  std::string steps;
  testing::expect_matches_reference(
      {Shape(DType::kF32, {6, 70, 8, 3})},
      [](Builder& b, auto& p) {
        return std::vector<Instruction*>{b.reduce(Opcode::kReduceSum, p[0], {0, 2}), b.reduce(Opcode::kReduceMax, p[0], {1, 3}),
                                         b.reduce(Opcode::kReduceMin, b.unary(Opcode::kExp, p[0]), {0, 1, 3})};
      },
      {.tol = 1e-5, .backend = backend.get(), .steps = &steps});
  EXPECT_NE(steps.find("_transpose"), std::string::npos) << steps;
}

}  // namespace
}  // namespace kiln::cuda
