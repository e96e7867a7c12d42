// Every row of the elementwise table (ir/elementwise.def) in every engine: generated code, the
// loop interpreter and the reference evaluator give the same bits for operands drawn over
// every bit pattern (all exponents, both signs, NaN, infinities, signed zeros, subnormals),
// in each dtype the row takes. One row's math is one template, so this holds by
// construction; the test catches an arithmetic (core/scalar_arith.h, ir_value_arith_impl.h)
// whose operations differ.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kiln/core/dtype_dispatch.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/elementwise.h"
#include "kiln/ir/module.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cpu/cpu_jit.h"
#include "kiln/runtime/cpu/loop_kernel.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kN = 1 << 15;

// Random bit patterns of dtype `t`, with the special values first.
HostTensor any_bits(DType t, std::mt19937& rng) {
  HostTensor x(Shape(t, {kN}));
  auto* bytes = static_cast<unsigned char*>(x.raw_data());
  for (int64_t i = 0; i < x.byte_size(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* v = x.data<T>().data();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T specials[] = {T(0), -T(0), T(0.5), T(-0.5), T(1.5), T(2.5), T(-2.5), T(1), T(-1), T(3),
                            std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                            std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::denorm_min(),
                            std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest()};
      std::copy(std::begin(specials), std::end(specials), v);
      // Small values too: random bits are mostly huge or tiny.
      std::uniform_real_distribution<double> small(-8, 8);
      for (int64_t i = kN / 2; i < kN; ++i) v[i] = static_cast<T>(small(rng));
    } else if constexpr (std::is_same_v<T, int32_t>) {
      const T specials[] = {0, 1, -1, 2, -2, 7, -7, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
      std::copy(std::begin(specials), std::end(specials), v);
      std::uniform_int_distribution<int32_t> small(-9, 9);  // divisors and remainders of every sign
      for (int64_t i = kN / 2; i < kN; ++i) v[i] = small(rng);
    }
  });
  return x;
}

bool same_bits(const HostTensor& a, const HostTensor& b, int64_t* first) {
  const size_t width = size_of(a.dtype());
  const auto* x = static_cast<const unsigned char*>(a.raw_data());
  const auto* y = static_cast<const unsigned char*>(b.raw_data());
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (int64_t i = 0; i < kN; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (std::isnan(av[k]) && std::isnan(bv[k])) continue;  // NaN payloads may differ
    if (std::memcmp(x + k * width, y + k * width, width) != 0) {
      *first = i;
      return false;
    }
  }
  return true;
}

TEST(ElementwiseTableTest, EveryRowGivesTheSameBitsInEveryEngine) {
  ASSERT_NE(CpuJit::instance(), nullptr) << "LLVM cannot target this CPU";
  std::mt19937 rng(34);
  for (const ir::elementwise::RowInfo& row : ir::elementwise::kRows) {
    for (DType t : {DType::kF32, DType::kF64, DType::kI32}) {
      if (!ir::elementwise::accepts(row.dtypes, t)) continue;
      SCOPED_TRACE(str_cat(row.name, " ", t));
      ir::Module module("row");
      ir::Computation* c = module.add_computation("body");
      ir::Builder b(c);
      std::vector<HostTensor> args;
      std::vector<ir::Instruction*> operands;
      for (int k = 0; k < row.arity; ++k) {
        args.push_back(any_bits(t, rng));
        operands.push_back(b.parameter(args.back().shape(), str_cat("x", k)));
      }
      c->add_output(b.add(row.opcode, operands, {}));
      const HostTensor reference = ir::evaluate(*c, args)[0];
      std::vector<const void*> in;
      for (const HostTensor& a : args) in.push_back(a.raw_data());
      for (LoopEngine engine : {LoopEngine::kInterpreter, LoopEngine::kGenerated}) {
        auto kernel = LoopKernel::create(*c, engine);
        ASSERT_NE(kernel, nullptr);
        if (engine == LoopEngine::kGenerated) {
          ASSERT_TRUE(kernel->generated());
        }
        HostTensor out(reference.shape());
        kernel->run(in.data(), out.raw_data());
        int64_t first = -1;
        EXPECT_TRUE(same_bits(out, reference, &first))
            << (engine == LoopEngine::kGenerated ? "generated code" : "the interpreter") << " differs from the "
            << "reference first at element " << first << ": " << out.to_vector<double>()[static_cast<size_t>(first)]
            << " vs " << reference.to_vector<double>()[static_cast<size_t>(first)] << " for operands "
            << args[0].to_vector<double>()[static_cast<size_t>(first)]
            << (row.arity > 1 ? str_cat(", ", args[1].to_vector<double>()[static_cast<size_t>(first)]) : "");
      }
    }
  }
}

}  // namespace
}  // namespace kiln::cpu
