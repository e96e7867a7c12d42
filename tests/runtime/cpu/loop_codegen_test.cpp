// Generated loop kernels (LLVM, CpuJit) against the register interpreter and the reference
// evaluator: random fused computations (op chains over every loop op, broadcasts, transposes,
// strided slices, iota, converts through every dtype, inner stages) must give the
// interpreter's bytes exactly, and the reference's values within float tolerance; reductions
// with fused producers read the generated code in place of the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <utility>
#include <algorithm>
#include <bit>
#include <iterator>
#include <limits>

#include "kiln/compiler/codegen/kernel_cache.h"
#include "kiln/compiler/codegen/llvm_codegen.h"
#include "kiln/compiler/codegen/loop_ir.h"
#include "kiln/core/dtype_dispatch.h"
#include "kiln/core/half.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/ir/reference_eval.h"
#include "kiln/runtime/cpu/cpu_jit.h"
#include "kiln/runtime/cpu/loop_kernel.h"
#include "kiln/runtime/cpu/reduce_kernel.h"
#include "tests/testing/random_loop_body.h"

namespace kiln::cpu {
namespace {

using ir::Builder;
using ir::Instruction;
using ir::Opcode;
using testing::random_dims;
using testing::random_tensor;
using testing::RandomBody;

std::vector<const void*> pointers(const std::vector<HostTensor>& args) {
  std::vector<const void*> p;
  for (const HostTensor& a : args) p.push_back(a.raw_data());
  return p;
}

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
  double worst = 0;
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < a.shape().num_elements(); ++i) {
      const double x = to_double(a.data<T>()[i]), y = to_double(b.data<T>()[i]);
      worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(y)));
    }
  });
  return worst;
}

// Runs the interpreted and the generated kernel on `args` and expects the same bytes; returns
// the generated output.
template <typename Kernel>
HostTensor expect_same_bytes(const Kernel& interp, const Kernel& gen, const Shape& shape,
                             const std::vector<HostTensor>& args) {
  const std::vector<const void*> in = pointers(args);
  HostTensor expected(shape), actual(shape);
  interp.run(in.data(), expected.raw_data());
  gen.run(in.data(), actual.raw_data());
  EXPECT_EQ(std::memcmp(expected.raw_data(), actual.raw_data(), static_cast<size_t>(expected.byte_size())), 0)
      << "generated code differs from the interpreter by " << max_abs_diff(actual, expected);
  return actual;
}

TEST(LoopCodegenTest, RandomFusedLoopsMatchTheInterpreterBitForBit) {
  ASSERT_NE(CpuJit::instance(), nullptr) << "LLVM cannot target this CPU";
  std::mt19937 rng(20261204);
  static const DType kOut[] = {DType::kF32, DType::kF32, DType::kF64, DType::kBF16, DType::kF16,
                               DType::kI32, DType::kU8, DType::kBool};
  int generated = 0;
  for (int trial = 0; trial < 150; ++trial) {
    ir::Module module("random");
    ir::Computation* c = module.add_computation("body");
    Builder b(c);
    std::vector<HostTensor> args;
    const Dims dims = random_dims(rng);
    Instruction* root = RandomBody(rng, b, dims).build(std::uniform_int_distribution<int>(1, 10)(rng), args);
    const DType out = kOut[trial % 8];
    if (out != DType::kF32) root = b.convert(root, out);
    c->add_output(root);
    SCOPED_TRACE(str_cat("trial ", trial, " dims ", dims_to_string(dims), " -> ", name(out)));

    auto interp = LoopKernel::create(*c, LoopEngine::kInterpreter);
    auto gen = LoopKernel::create(*c, LoopEngine::kGenerated);
    ASSERT_NE(interp, nullptr);
    ASSERT_NE(gen, nullptr);
    ASSERT_FALSE(interp->generated());
    ASSERT_TRUE(gen->generated());
    ++generated;
    HostTensor actual = expect_same_bytes(*interp, *gen, root->shape(), args);
    if (::testing::Test::HasFailure()) return;

    if (is_floating(out) && out != DType::kBF16 && out != DType::kF16) {  // the oracle, loosely
      HostTensor reference = ir::evaluate(*c, args)[0];
      EXPECT_LT(max_abs_diff(actual, reference), 2e-3);
    }
  }
  EXPECT_EQ(generated, 150);
}

// A horizontally fused body (runtime/cpu/loop_grouping.h): 2-3 outputs of different dtypes over
// one index space, each later one reading the earlier ones rounded to their dtypes, as
// merge_group builds it. Both engines must store every output exactly as a kernel computing
// that output alone does.
struct MultiOutputCase {
  ir::Module module{"multi"};
  std::vector<HostTensor> args;
  std::vector<Instruction*> outputs;
};

void build_multi_output(uint32_t seed, MultiOutputCase& mc) {
  static const DType kOut[] = {DType::kF32, DType::kBF16, DType::kF64, DType::kF16, DType::kI32, DType::kBool};
  std::mt19937 rng(seed);
  ir::Computation* c = mc.module.add_computation("body");
  Builder b(c);
  const Dims dims = random_dims(rng);
  const int n = std::uniform_int_distribution<int>(2, 3)(rng);
  Instruction* previous = nullptr;
  for (int k = 0; k < n; ++k) {
    Instruction* v = RandomBody(rng, b, dims).build(std::uniform_int_distribution<int>(1, 6)(rng), mc.args);
    if (previous != nullptr) v = b.binary(Opcode::kAdd, v, b.convert(previous, DType::kF32));
    const DType out = kOut[std::uniform_int_distribution<int>(0, 5)(rng)];
    Instruction* stored = out == DType::kF32 ? v : b.convert(v, out);
    mc.outputs.push_back(stored);
    previous = b.convert(stored, out);  // what a later member reads
  }
}

TEST(LoopCodegenTest, MultiOutputLoopsMatchSingleOutputKernelsBitForBit) {
  ASSERT_NE(CpuJit::instance(), nullptr) << "LLVM cannot target this CPU";
  int compared = 0;
  for (uint32_t trial = 0; trial < 60; ++trial) {
    SCOPED_TRACE(str_cat("trial ", trial));
    MultiOutputCase all;
    build_multi_output(1000 + trial, all);
    ir::Computation* c = all.module.computations().back().get();
    for (Instruction* o : all.outputs) c->add_output(o);
    const bool in_double = codegen::LoopIr::build(std::vector<const Instruction*>(all.outputs.begin(), all.outputs.end()))->use_double;
    const std::vector<const void*> in = pointers(all.args);
    std::vector<HostTensor> results[2];
    for (LoopEngine engine : {LoopEngine::kInterpreter, LoopEngine::kGenerated}) {
      auto k = LoopKernel::create(*c, engine);
      ASSERT_NE(k, nullptr);
      ASSERT_EQ(k->num_outputs(), all.outputs.size());
      std::vector<HostTensor>& r = results[engine == LoopEngine::kGenerated];
      std::vector<void*> outs;
      for (Instruction* o : all.outputs) {
        r.push_back(HostTensor(o->shape()));
        outs.push_back(r.back().raw_data());
      }
      k->run_outputs(in.data(), outs.data());
    }
    for (size_t k = 0; k < all.outputs.size(); ++k) {
      MultiOutputCase one;  // the same body again, computing output k alone
      build_multi_output(1000 + trial, one);
      one.module.computations().back()->add_output(one.outputs[k]);
      // Grouping keeps members' register types (can_join), so only like ones compare.
      if (codegen::LoopIr::build(*one.outputs[k])->use_double != in_double) continue;
      ++compared;
      auto single = LoopKernel::create(*one.module.computations().back(), LoopEngine::kInterpreter);
      HostTensor expected(one.outputs[k]->shape());
      single->run(in.data(), expected.raw_data());
      for (const std::vector<HostTensor>& r : results)
        EXPECT_EQ(std::memcmp(expected.raw_data(), r[k].raw_data(), static_cast<size_t>(expected.byte_size())), 0)
            << "output " << k << " (" << name(expected.dtype()) << ") differs by " << max_abs_diff(r[k], expected);
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(compared, 60);
}

// i32 beyond 2^24 (where float registers would round) stays exact; f32 arithmetic in the same
// (double-register) body still gives f32's results.
TEST(LoopCodegenTest, I32BeyondTwoToThe24IsExactAndF32StaysF32) {
  ir::Module module("wide");
  ir::Computation* c = module.add_computation("body");
  Builder b(c);
  const Shape si(DType::kI32, {40}), sf(DType::kF32, {40});
  Instruction* i = b.parameter(si, "i");
  Instruction* f = b.parameter(sf, "f");
  Instruction* sum = b.binary(Opcode::kAdd, i, b.binary(Opcode::kMul, i, b.full(si, 3)));  // 4 i
  // f32 ops whose double results would round differently: (f * f) / 3 + f.
  Instruction* g = b.binary(Opcode::kAdd, b.binary(Opcode::kDiv, b.binary(Opcode::kMul, f, f), b.full(sf, 3)), f);
  c->add_output(sum);
  c->add_output(g);
  HostTensor ia(si), fa(sf);
  std::mt19937 rng(3);
  for (int k = 0; k < 40; ++k) {
    ia.data<int32_t>()[k] = (1 << 24) + 1 + k * 7919;  // odd, above 2^24: float would round
    fa.data<float>()[k] = std::uniform_real_distribution<float>(-100, 100)(rng);
  }
  const std::vector<const void*> in{ia.raw_data(), fa.raw_data()};
  for (LoopEngine engine : {LoopEngine::kInterpreter, LoopEngine::kGenerated}) {
    auto k = LoopKernel::create(*c, engine);
    HostTensor out_i(si), out_f(sf);
    void* outs[] = {out_i.raw_data(), out_f.raw_data()};
    k->run_outputs(in.data(), outs);
    for (int j = 0; j < 40; ++j) {
      EXPECT_EQ(out_i.data<int32_t>()[j], 4 * ia.data<int32_t>()[j]) << j;
      const float x = fa.data<float>()[j];
      const float expected = x * x / 3.0f + x;  // f32 arithmetic, op by op
      EXPECT_EQ(out_f.data<float>()[j], expected) << j;
    }
  }
}

// exp, tanh, log and logistic of f32 run core/float_math.h's recipes in all three engines: the
// generated vector code, the interpreter and the reference evaluator agree bit for bit on
// special values and on a million values spread over every exponent (NaN matches NaN), and
// none of them calls libm (so the loop vectorizes).
TEST(LoopCodegenTest, TranscendentalsGiveTheSameBitsInEveryEngine) {
  ASSERT_NE(CpuJit::instance(), nullptr) << "LLVM cannot target this CPU";
  constexpr int64_t kN = 1 << 20;
  const Shape sf(DType::kF32, {kN});
  HostTensor xa(sf);
  float* x = xa.data<float>().data();
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72f, 88.73f, -87.4f, -103.9f, -104.0f,
                            1e-30f, -1e-30f, 0x1p-12f, 0x1.fffffep-13f, 9.02f, -9.02f, 20.5f,
                            std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()};
  std::copy(std::begin(specials), std::end(specials), x);
  std::mt19937 rng(2026);
  for (int64_t k = static_cast<int64_t>(std::size(specials)); k < kN; ++k)
    x[k] = std::bit_cast<float>(static_cast<uint32_t>(rng()));  // every exponent, both signs
  for (Opcode op : {Opcode::kExp, Opcode::kTanh, Opcode::kLog, Opcode::kLogistic}) {
    SCOPED_TRACE(opcode_name(op));
    ir::Module module("transcendental");
    ir::Computation* c = module.add_computation("body");
    Builder b(c);
    c->add_output(b.unary(op, b.parameter(sf, "x")));
    auto interp = LoopKernel::create(*c, LoopEngine::kInterpreter);
    auto gen = LoopKernel::create(*c, LoopEngine::kGenerated);
    ASSERT_TRUE(gen->generated());
    const std::vector<HostTensor> args{xa};
    HostTensor interpreted(sf), generated(sf);
    const void* in[] = {xa.raw_data()};
    interp->run(in, interpreted.raw_data());
    gen->run(in, generated.raw_data());
    const HostTensor reference = ir::evaluate(*c, args)[0];
    for (const HostTensor* other : {&std::as_const(interpreted), &reference}) {
      int64_t differ = 0, first = -1;
      for (int64_t k = 0; k < kN; ++k) {
        if (std::bit_cast<uint32_t>(generated.data<float>()[k]) == std::bit_cast<uint32_t>(other->data<float>()[k])) continue;
        if (differ++ == 0) first = k;
      }
      auto bits = [](float f) { return str_cat(f, " (0x", std::hex, std::bit_cast<uint32_t>(f), ")"); };
      EXPECT_EQ(differ, 0) << (other == &reference ? "reference" : "interpreter") << " first at x = " << bits(x[first])
                           << ": " << bits(generated.data<float>()[first]) << " vs " << bits(other->data<float>()[first]);
    }

    std::optional<codegen::LoopIr> loop = codegen::LoopIr::build(*c->outputs()[0]);
    ASSERT_TRUE(loop.has_value());
    const codegen::GeneratedCode code =
        codegen::generate_loop_code({{&*loop, "k", false}}, codegen::CodegenTarget::host(), true);
    for (const char* libm : {"@expf", "@tanhf", "@logf"})
      EXPECT_EQ(code.ir_text.find(libm), std::string::npos) << libm << " called in\n" << code.ir_text.substr(0, 3000);
    EXPECT_NE(code.ir_text.find(" x double>"), std::string::npos) << "no vector of f64 lanes";
  }
}

// bf16/f16 values that test the load and the rounding store: sums that fall exactly halfway
// between two 16-bit values (ties: to the even one), NaN, infinities, signed zeros, the
// smallest and largest finite values, and plain random values.
// With `tie_partner`, elements 0 and 2 are ulp/2 instead: added to the other tensor's 1 and
// 1 + ulp they make exact ties.
std::vector<uint16_t> special_16bit(DType t, size_t n, std::mt19937& rng, bool tie_partner = false) {
  const bool bf = t == DType::kBF16;
  const float one_ulp = bf ? 1.0f / 128 : 1.0f / 1024;  // spacing of 16-bit values in [1, 2)
  auto bits = [&](float f) { return bf ? f32_to_bf16_bits(f) : f32_to_f16_bits(f); };
  std::vector<uint16_t> v = {bits(1.0f), bits(one_ulp / 2), bits(1.0f + one_ulp), bits(one_ulp / 2),
                             static_cast<uint16_t>(bf ? 0x7fc0 : 0x7e00), static_cast<uint16_t>(bf ? 0x7f80 : 0x7c00),
                             static_cast<uint16_t>(bf ? 0xff80 : 0xfc00), 0x8000, 0x0000, 0x0001,
                             static_cast<uint16_t>(bf ? 0x7f7f : 0x7bff)};
  std::uniform_real_distribution<float> d(-4, 4);
  while (v.size() < n) v.push_back(bits(d(rng)));
  v.resize(n);
  if (tie_partner) v[0] = v[2] = bits(one_ulp / 2);
  return v;
}

// Exact agreement with the reference evaluator; NaN matches any NaN.
void expect_same_16bit(const HostTensor& got, const HostTensor& want) {
  const auto* g = static_cast<const uint16_t*>(got.raw_data());
  const auto* w = static_cast<const uint16_t*>(want.raw_data());
  const std::vector<double> gv = got.to_vector<double>();
  for (int64_t i = 0; i < got.shape().num_elements(); ++i) {
    if (std::isnan(gv[static_cast<size_t>(i)]) && std::isnan(want.to_vector<double>()[static_cast<size_t>(i)])) continue;
    EXPECT_EQ(g[i], w[i]) << "element " << i << " of " << got.shape();
  }
}

// `c`'s outputs as one loop kernel on `engine` give `want` exactly.
void expect_outputs_same_16bit(const ir::Computation& c, const std::vector<HostTensor>& args,
                               const std::vector<HostTensor>& want, LoopEngine engine) {
  auto k = LoopKernel::create(c, engine);
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->generated(), engine == LoopEngine::kGenerated);
  std::vector<HostTensor> got;
  std::vector<void*> outs;
  for (const Instruction* o : c.outputs()) outs.push_back(got.emplace_back(o->shape()).raw_data());
  const std::vector<const void*> in = pointers(args);
  k->run_outputs(in.data(), outs.data());
  for (size_t i = 0; i < got.size(); ++i) expect_same_16bit(got[i], want[i]);
}

TEST(LoopCodegenTest, SixteenBitLoadsAndRoundingStoresMatchTheReferenceExactly) {
  std::mt19937 rng(16);
  for (DType t : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(name(t));
    // A mixed-precision Dense's epilogue and its gradient, in the 16-bit dtype itself:
    // relu(a + b) and (a * b - a) / 3 in f32 registers, each rounded once on its store.
    ir::Module module("half");
    ir::Computation* c = module.add_computation("body");
    Builder b(c);
    const Shape s(t, {1003});  // past a vector width, with a scalar tail
    Instruction* a = b.parameter(s, "a");
    Instruction* x = b.parameter(s, "b");
    c->add_output(b.binary(Opcode::kMax, b.binary(Opcode::kAdd, a, x), b.full(s, 0.0)));
    c->add_output(b.binary(Opcode::kDiv, b.binary(Opcode::kSub, b.binary(Opcode::kMul, a, x), a), b.full(s, 3.0)));
    std::vector<HostTensor> args;
    for (int k = 0; k < 2; ++k) {
      HostTensor h(s);
      std::vector<uint16_t> v = special_16bit(t, 1003, rng, /*tie_partner=*/k == 1);
      if (k == 1) std::shuffle(v.begin() + 4, v.end(), rng);  // specials meet other values too
      std::memcpy(h.raw_data(), v.data(), v.size() * 2);
      args.push_back(std::move(h));
    }
    const std::vector<HostTensor> want = ir::evaluate(*c, args);
    // The tie pairs: 1 + ulp/2 rounds down to 1 (even), 1 + 3 ulp/2 up to 1 + 2 ulp.
    EXPECT_EQ(want[0].to_vector<double>()[0], 1.0);
    EXPECT_EQ(want[0].to_vector<double>()[2], 1.0 + 2 * (t == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024));
    expect_outputs_same_16bit(*c, args, want, LoopEngine::kGenerated);

    // A reduction reading 16-bit values (f32 accumulation), with the infinities and NaN of
    // some rows: the sums are close to the reference, and inf/NaN rows stay inf/NaN.
    ir::Module rm("half_reduce");
    ir::Computation* rc = rm.add_computation("body");
    Builder rb(rc);
    const Shape rs(t, {17, 59});
    Instruction* r = rb.reduce(Opcode::kReduceSum, rb.binary(Opcode::kMul, rb.parameter(rs, "x"), rb.full(rs, 0.5)), {1});
    rc->add_output(r);
    HostTensor rx(rs);
    std::vector<uint16_t> rv = special_16bit(t, 17 * 59, rng);
    std::memcpy(rx.raw_data(), rv.data(), rv.size() * 2);
    const std::vector<HostTensor> rargs{rx};
    const HostTensor rwant = ir::evaluate(*rc, rargs)[0];
    auto reduce = ReduceKernel::create(*r, LoopEngine::kGenerated);
    ASSERT_NE(reduce, nullptr);
    HostTensor rgot(r->shape());
    const void* rin[] = {rx.raw_data()};
    reduce->run(rin, rgot.raw_data());
    const std::vector<double> g = rgot.to_vector<double>(), w = rwant.to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(w[i]) || std::isinf(w[i])) {
        EXPECT_TRUE(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i]) << "row " << i << ": " << g[i] << " vs " << w[i];
      } else {
        EXPECT_NEAR(g[i], w[i], (t == DType::kBF16 ? 1.0 / 64 : 1.0 / 512) * (1 + std::fabs(w[i]))) << "row " << i;
      }
    }
  }
}

// A 16-bit op whose result is one of a few values its dtype holds exactly needs no rounding,
// and a convert that leaves every possible value alone is no instruction: the Keras relu
// gradient dy * (x > 0 + 0.5 * (x == 0)) in bf16 rounds once, not five times, with the
// reference's bits: its last product, which only the store reads, is rounded by the store
// itself (no rounding op). A sum of known values that bf16 cannot hold (256 + 3 = 259) is still
// rounded, and a rounded value that a later op reads keeps its rounding op.
TEST(LoopCodegenTest, KnownFewValuesSkipRoundingWithTheSameBits) {
  std::mt19937 rng(33);
  for (DType t : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(name(t));
    ir::Module module("masks");
    ir::Computation* c = module.add_computation("body");
    Builder b(c);
    const Shape s(t, {1003});
    Instruction* dy = b.parameter(s, "dy");
    Instruction* x = b.parameter(s, "x");
    Instruction* gt = b.convert(b.compare(ir::Comparison::kGt, x, b.full(s, 0.0)), t);
    Instruction* eq = b.convert(b.compare(ir::Comparison::kEq, x, b.full(s, 0.0)), t);
    Instruction* mask = b.binary(Opcode::kAdd, gt, b.binary(Opcode::kMul, eq, b.full(s, 0.5)));
    c->add_output(b.binary(Opcode::kMul, dy, mask));
    // 256 + 3 * gt: 256 or 259, and bf16 holds only 258 and 260 there (f16 holds 259).
    c->add_output(b.binary(Opcode::kAdd, b.full(s, 256.0), b.binary(Opcode::kMul, gt, b.full(s, 3.0))));
    std::optional<codegen::LoopIr> first = codegen::LoopIr::build(*c->outputs()[0]);
    ASSERT_TRUE(first);
    int roundings = 0;
    for (const codegen::LoopInstr& in : first->stages.back().code)
      roundings += in.op == codegen::LoopOp::kRoundBF16 || in.op == codegen::LoopOp::kRoundF16;
    EXPECT_EQ(roundings, 0);
    // dy * mask, then that (rounded) times dy: the first product is read by an op, so rounded.
    std::optional<codegen::LoopIr> chained = codegen::LoopIr::build(*b.binary(Opcode::kMul, c->outputs()[0], dy));
    ASSERT_TRUE(chained);
    roundings = 0;
    for (const codegen::LoopInstr& in : chained->stages.back().code)
      roundings += in.op == codegen::LoopOp::kRoundBF16 || in.op == codegen::LoopOp::kRoundF16;
    EXPECT_EQ(roundings, 1);
    std::vector<HostTensor> args;
    for (int k = 0; k < 2; ++k) {
      HostTensor h(s);
      std::vector<uint16_t> v = special_16bit(t, 1003, rng);
      if (k == 1)  // x: many exact zeros, both signs
        for (size_t i = 0; i < v.size(); i += 3) v[i] = i % 2 == 0 ? 0x0000 : 0x8000;
      std::memcpy(h.raw_data(), v.data(), v.size() * 2);
      args.push_back(std::move(h));
    }
    const std::vector<HostTensor> want = ir::evaluate(*c, args);
    for (LoopEngine engine : {LoopEngine::kGenerated, LoopEngine::kInterpreter})
      expect_outputs_same_16bit(*c, args, want, engine);
    EXPECT_EQ(want[1].to_vector<double>()[0], 256.0);  // x[0] is +0: gt is 0
    const std::vector<double> sums = want[1].to_vector<double>();
    EXPECT_NE(std::find(sums.begin(), sums.end(), t == DType::kBF16 ? 260.0 : 259.0), sums.end());
  }
}

TEST(LoopCodegenTest, LargeInPlaceUpdateMatchesInterpreterAcrossThreads) {
  // Adam-like: out may be the buffer of an input (the planner donates variables).
  ir::Module module("adam");
  ir::Computation* c = module.add_computation("body");
  Builder b(c);
  const Shape s(DType::kF32, {784, 128});
  Instruction* p = b.parameter(s, "param");
  Instruction* g = b.parameter(s, "grad");
  Instruction* m = b.binary(Opcode::kAdd, b.binary(Opcode::kMul, b.full(s, 0.9), p), b.binary(Opcode::kMul, b.full(s, 0.1), g));
  Instruction* root = b.binary(Opcode::kSub, p, b.binary(Opcode::kDiv, m, b.binary(Opcode::kAdd, b.unary(Opcode::kSqrt, b.unary(Opcode::kAbs, g)), b.full(s, 1e-7))));
  c->add_output(root);
  std::mt19937 rng(7);
  std::vector<HostTensor> args{random_tensor(s, rng), random_tensor(s, rng)};
  HostTensor expected(s);
  auto interp = LoopKernel::create(*c, LoopEngine::kInterpreter);
  auto gen = LoopKernel::create(*c, LoopEngine::kGenerated);
  std::vector<const void*> in = pointers(args);
  interp->run(in.data(), expected.raw_data());
  gen->run(in.data(), args[0].raw_data());  // in place over the parameter
  EXPECT_EQ(std::memcmp(expected.raw_data(), args[0].raw_data(), static_cast<size_t>(s.byte_size())), 0);
}

TEST(LoopCodegenTest, ReductionsReadGeneratedProducersExactly) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    ir::Module module("reduce");
    ir::Computation* c = module.add_computation("body");
    Builder b(c);
    std::vector<HostTensor> args;
    Dims dims = random_dims(rng);
    if (dims.empty()) dims = {17};
    Instruction* x = RandomBody(rng, b, dims).build(4, args);
    Dims axes;
    for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d)
      if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) axes.push_back(d);
    if (axes.empty()) axes.push_back(0);
    static const Opcode kOps[] = {Opcode::kReduceSum, Opcode::kReduceMax, Opcode::kReduceMin};
    Instruction* r = b.reduce(kOps[trial % 3], x, axes);
    c->add_output(r);
    SCOPED_TRACE(str_cat("trial ", trial, " dims ", dims_to_string(dims), " axes ", dims_to_string(axes)));
    auto interp = ReduceKernel::create(*r, LoopEngine::kInterpreter);
    auto gen = ReduceKernel::create(*r, LoopEngine::kGenerated);
    ASSERT_NE(interp, nullptr);
    ASSERT_NE(gen, nullptr);
    expect_same_bytes(*interp, *gen, r->shape(), args);
    if (::testing::Test::HasFailure()) return;
  }
}

// The disk cache: a second JIT-less lookup finds the entry; stale and corrupt entries are
// rejected, never returned.
TEST(KernelCacheTest, StoresLoadsAndRejectsStaleOrCorruptEntries) {
  const std::string dir = (std::filesystem::temp_directory_path() / str_cat("kiln_kernel_cache_", ::getpid())).string();
  std::filesystem::remove_all(dir);
  codegen::KernelCache cache(dir, "tag A");
  EXPECT_FALSE(cache.load("key").has_value());
  cache.store("key", std::string("object\0bytes", 12));
  std::optional<std::string> back = cache.load("key");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, std::string("object\0bytes", 12));
  EXPECT_FALSE(cache.load("other key").has_value());

  codegen::KernelCache other_version(dir, "tag B");  // another Kiln/LLVM/CPU: its own entry
  EXPECT_FALSE(other_version.load("key").has_value());
  // The same file name under another tag (a hash collision, or a file copied between
  // machines) is rejected by the tag stored inside.
  std::filesystem::copy_file(cache.path_for("key"), other_version.path_for("key"));
  EXPECT_FALSE(other_version.load("key").has_value());
  EXPECT_EQ(other_version.stats().rejected, 1);

  for (size_t flip : {size_t{3}, size_t{20}, size_t{40}}) {  // one flipped byte anywhere
    cache.store("key", "object bytes");
    std::fstream f(cache.path_for("key"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(flip));
    f.put('\x7f');
    f.close();
    EXPECT_FALSE(cache.load("key").has_value()) << "flip at " << flip;
  }
  std::filesystem::resize_file(cache.path_for("key"), 10);  // torn
  EXPECT_FALSE(cache.load("key").has_value());
  cache.store("key", "fresh");  // a rejected entry is overwritten by the recompiled code
  EXPECT_EQ(cache.load("key").value_or(""), "fresh");
  std::filesystem::remove_all(dir);
}

TEST(LoopCodegenTest, GeneratesPtxFromTheSameEmitter) {
  ir::Module module("ptx");
  ir::Computation* c = module.add_computation("body");
  Builder b(c);
  const Shape s(DType::kF32, {64, 10});
  Instruction* x = b.parameter(s, "x");
  Instruction* bias = b.parameter(Shape(DType::kF32, {10}), "bias");
  Instruction* y = b.unary(Opcode::kExp, b.binary(Opcode::kAdd, x, b.broadcast_in_dim(bias, {64, 10}, {1})));
  std::optional<codegen::LoopIr> loop = codegen::LoopIr::build(*y);
  ASSERT_TRUE(loop.has_value());
  const char* libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  if (!std::filesystem::exists(libdevice)) GTEST_SKIP() << "no CUDA libdevice at " << libdevice;
  codegen::GeneratedCode ptx =
      codegen::generate_loop_code({{&*loop, "k", false}}, codegen::CodegenTarget::nvptx(90), false, libdevice);
  EXPECT_NE(ptx.binary.find(".entry k_s0"), std::string::npos) << ptx.binary.substr(0, 2000);
  EXPECT_NE(ptx.binary.find(".target sm_86"), std::string::npos);  // LLVM 15's newest; the driver JITs it for sm_90
  EXPECT_EQ(ptx.binary.find("__nv_expf"), std::string::npos) << "libdevice's exp must be inlined";
}

}  // namespace
}  // namespace kiln::cpu
