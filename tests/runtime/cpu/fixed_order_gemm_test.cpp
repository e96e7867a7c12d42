// The fixed-order GEMM behind batch-invariant inference: every output equals a scalar
// fma chain over k = 0..K-1 bit for bit (so the x86-64-v3 and v4 variants agree with each
// other: CI runs this binary under KILN_CPU_ISA=baseline too), a row's bits do not depend on
// the rows around it or on the team size, and MatmulKernel's batch-invariant path runs it for
// strided, batched and 16-bit operands.
#include "kiln/runtime/cpu/fixed_order_gemm.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kiln/core/half.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cpu/onednn_matmul.h"
#include "tests/testing/backend_conformance.h"

namespace kiln::cpu {
namespace {

using compiler::EpilogueActivation;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// The promise, written out: acc = 0, acc = fma(a, w, acc) for k in order, + bias, activation.
float chain(const std::vector<float>& a, int64_t m, int64_t K, const std::vector<float>& w, int64_t n, int64_t N,
            const float* bias, EpilogueActivation act) {
  float acc = 0.0f;
  for (int64_t k = 0; k < K; ++k) acc = std::fma(a[m * K + k], w[k * N + n], acc);
  if (bias != nullptr) acc += bias[n];
  return apply_epilogue_activation(act, acc);
}

bool same_bits(float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }

TEST(FixedOrderGemmTest, EveryOutputIsTheScalarFmaChainBitForBit) {
  for (int64_t M : {1, 5, 6, 7, 13}) {
    for (int64_t N : {1, 7, 8, 16, 17, 31, 32, 33, 70}) {
      for (int64_t K : {0, 1, 3, 64, 257}) {
        const std::vector<float> a = random_floats(static_cast<size_t>(M * K), 1);
        const std::vector<float> w = random_floats(static_cast<size_t>(K * N), 2);
        const std::vector<float> bias = random_floats(static_cast<size_t>(N), 3);
        for (EpilogueActivation act : {EpilogueActivation::kNone, EpilogueActivation::kRelu, EpilogueActivation::kTanh}) {
          std::vector<float> c(static_cast<size_t>(M * N), -7.0f);
          fixed_order_gemm({.a = a.data(), .lm = K, .lk = 1, .w = w.data(), .ldw = N, .c = c.data(), .ldc = N,
                            .M = M, .N = N, .K = K, .bias = bias.data(), .activation = act});
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n)
              ASSERT_TRUE(same_bits(c[m * N + n], chain(a, m, K, w, n, N, bias.data(), act)))
                  << "M" << M << " N" << N << " K" << K << " at (" << m << ", " << n << "): " << c[m * N + n];
        }
      }
    }
  }
}

TEST(FixedOrderGemmTest, ARowHasTheSameBitsInEveryBatchAndOnEveryTeamSize) {
  const int64_t K = 784, N = 128, M = 128;
  const std::vector<float> a = random_floats(static_cast<size_t>(M * K), 4);
  const std::vector<float> w = random_floats(static_cast<size_t>(K * N), 5);
  const int saved = omp_get_max_threads();
  std::vector<float> whole(static_cast<size_t>(M * N));
  fixed_order_gemm({.a = a.data(), .lm = K, .w = w.data(), .ldw = N, .c = whole.data(), .ldc = N, .M = M, .N = N, .K = K});
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (int64_t rows : {1, 7, 32}) {
      for (int64_t start = 0; start + rows <= M; start += 37) {
        std::vector<float> part(static_cast<size_t>(rows * N));
        fixed_order_gemm({.a = a.data() + start * K, .lm = K, .w = w.data(), .ldw = N, .c = part.data(), .ldc = N,
                          .M = rows, .N = N, .K = K});
        ASSERT_EQ(std::memcmp(part.data(), whole.data() + start * N, part.size() * sizeof(float)), 0)
            << rows << " rows from row " << start << " on " << threads << " threads";
      }
    }
  }
  omp_set_num_threads(saved);
}

struct Dot {
  ir::Module module{"m"};
  ir::Instruction* dot = nullptr;
  Dot(DType t, const Dims& l, const Dims& r, const ir::DotDims& dims) {
    ir::Builder b(module.entry());
    ir::Instruction* pl = b.parameter(Shape(t, l), "l");  // parameters in operand order
    dot = b.dot_general(pl, b.parameter(Shape(t, r), "r"), dims);
    module.entry()->set_outputs({dot});
  }
};

// MatmulKernel's batch-invariant path against the reference evaluator's f64 product (within
// f32 rounding), and its rows against the same kernel built for one row.
TEST(FixedOrderGemmTest, BatchInvariantMatmulKernelsMatchTheReferenceAndTheirOwnRows) {
  struct Case {
    const char* name;
    DType t;
    Dims l, r;
    ir::DotDims dims;
  };
  const std::vector<Case> cases = {
      {"x W", DType::kF32, {40, 70}, {70, 53}, {.lhs_contracting = {1}, .rhs_contracting = {0}}},
      {"x W^T (packed weights)", DType::kF32, {40, 70}, {53, 70}, {.lhs_contracting = {1}, .rhs_contracting = {1}}},
      {"batched", DType::kF32, {3, 20, 9}, {3, 9, 11},
       {.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contracting = {2}, .rhs_contracting = {1}}},
      {"bf16 x W", DType::kBF16, {40, 70}, {70, 53}, {.lhs_contracting = {1}, .rhs_contracting = {0}}},
  };
  const MatmulOptions invariant{.batch_invariant = true};
  for (const Case& c : cases) {
    Dot d(c.t, c.l, c.r, c.dims);
    std::unique_ptr<MatmulKernel> k = MatmulKernel::create(*d.dot, false, EpilogueActivation::kNone, invariant);
    ASSERT_NE(k, nullptr) << c.name;
    EXPECT_EQ(k->path(), MatmulPath::kFixedOrder) << c.name;
    const HostTensor l = testing::random_tensor(Shape(c.t, c.l), 1), r = testing::random_tensor(Shape(c.t, c.r), 2);
    HostTensor out(d.dot->shape());
    k->run(l.raw_data(), r.raw_data(), nullptr, out.raw_data());
    const std::vector<HostTensor> args{l.astype(DType::kF64), r.astype(DType::kF64)};
    Dot ref(DType::kF64, c.l, c.r, c.dims);
    const std::vector<double> want = ir::evaluate(ref.module, args)[0].to_vector<double>();
    const std::vector<double> got = out.to_vector<double>();
    const double tol = c.t == DType::kBF16 ? 1.0 / 64 : 1e-5;
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << c.name << " element " << i;
    if (c.l.size() != 2) continue;
    // Row 17 alone, through a kernel built for one row: the same bits as in the batch of 40.
    Dims one = c.l;
    one[0] = 1;
    Dot single(c.t, one, c.r, c.dims);
    std::unique_ptr<MatmulKernel> k1 = MatmulKernel::create(*single.dot, false, EpilogueActivation::kNone, invariant);
    HostTensor row = l.slice_rows(17, 18), out1(single.dot->shape());
    k1->run(row.raw_data(), r.raw_data(), nullptr, out1.raw_data());
    const size_t bytes = static_cast<size_t>(out1.byte_size());
    EXPECT_EQ(std::memcmp(out1.raw_data(), static_cast<const char*>(out.raw_data()) + 17 * bytes, bytes), 0) << c.name;
  }
}

}  // namespace
}  // namespace kiln::cpu
