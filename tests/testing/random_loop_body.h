// Random loop-fusion bodies for the code generator's tests (tests/runtime/cpu/loop_codegen_test.cpp)
// and the GPU cases (tests/runtime/cpu/make_ptx_cases.cpp): op chains over every loop op,
// broadcasts (some of computed values: inner stages), transposes, strided slices, iota,
// constants and converts through every dtype, kept finite.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kiln/core/dtype_dispatch.h"
#include "kiln/core/host_tensor.h"
#include "kiln/core/str_cat.h"
#include "kiln/ir/builder.h"

namespace kiln::testing {

using ir::Builder;
using ir::Instruction;
using ir::Opcode;

inline HostTensor random_tensor(const Shape& shape, std::mt19937& rng) {
  HostTensor t(shape);
  std::uniform_real_distribution<double> u(-3, 3);
  visit_dtype(shape.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>().data();
    for (int64_t i = 0; i < shape.num_elements(); ++i) {
      const double v = u(rng);
      if constexpr (std::is_same_v<T, bool>) p[i] = v > 0;
      else if constexpr (std::is_same_v<T, uint8_t>) p[i] = static_cast<uint8_t>(std::abs(v) * 40);
      else if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(std::lround(v * 10));
      else p[i] = T(static_cast<float>(v));
    }
  });
  return t;
}

// Builds a random loop body over `out` dims: values of that shape from parameters (direct,
// broadcast from fewer dims, transposed, strided slices), iota and constants, combined by
// random loop ops kept finite (logs and roots of positive values, divisions by |x| + 1).
class RandomBody {
 public:
  RandomBody(std::mt19937& rng, Builder& b, Dims dims) : rng_(rng), b_(b), dims_(std::move(dims)) {}

  Instruction* build(int ops, std::vector<HostTensor>& args) {
    for (int i = 0; i < 3; ++i) values_.push_back(leaf(args));
    for (int i = 0; i < ops; ++i) values_.push_back(op(args));
    return values_.back();
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  Instruction* any() { return values_[static_cast<size_t>(pick(static_cast<int>(values_.size())))]; }
  Shape f32(const Dims& d) const { return Shape(DType::kF32, d); }

  Instruction* param(const Shape& s, std::vector<HostTensor>& args) {
    args.push_back(random_tensor(s, rng_));
    return b_.parameter(s, str_cat("p", args.size()));
  }

  Instruction* as_f32(Instruction* x) { return x->dtype() == DType::kF32 ? x : b_.convert(x, DType::kF32); }

  Instruction* leaf(std::vector<HostTensor>& args) {
    const int rank = static_cast<int>(dims_.size());
    switch (rank == 0 ? 5 * pick(2) : pick(rank > 1 ? 6 : 4)) {
      case 0: {  // any dtype, converted
        static const DType kTypes[] = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16,
                                       DType::kI32, DType::kI64, DType::kU8, DType::kBool};
        return as_f32(param(Shape(kTypes[pick(8)], dims_), args));
      }
      case 1: {  // broadcast from a subset of dims
        Dims kept, map;
        for (int d = 0; d < rank; ++d)
          if (pick(2) == 0) {
            kept.push_back(pick(3) == 0 ? 1 : dims_[static_cast<size_t>(d)]);
            map.push_back(d);
          }
        Instruction* p = param(f32(kept), args);
        if (pick(3) == 0 && !kept.empty()) p = b_.unary(Opcode::kTanh, p);  // an inner stage
        return b_.broadcast_in_dim(p, dims_, map);
      }
      case 2: return b_.convert(b_.iota(Shape(DType::kI32, dims_), pick(std::max(rank, 1))), DType::kF32);
      case 3: {  // a strided slice of a larger parameter
        Dims big, starts, limits, strides;
        for (int64_t d : dims_) {
          const int64_t s = 1 + pick(2), start = pick(3);
          big.push_back(start + (d - 1) * s + 1 + pick(2));
          starts.push_back(start);
          limits.push_back(start + (d - 1) * s + 1);
          strides.push_back(s);
        }
        return b_.slice(param(f32(big), args), starts, limits, strides);
      }
      case 4: {  // a transposed parameter
        Dims perm(dims_.size());
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng_);
        Dims src(dims_.size());
        for (size_t i = 0; i < perm.size(); ++i) src[static_cast<size_t>(perm[i])] = dims_[i];
        return b_.transpose(param(f32(src), args), perm);
      }
      default: return b_.full(f32(dims_), std::uniform_real_distribution<double>(-2, 2)(rng_));
    }
  }

  Instruction* positive(Instruction* x) {
    return b_.binary(Opcode::kAdd, b_.unary(Opcode::kAbs, x), b_.full(x->shape(), 0.5));
  }

  Instruction* op(std::vector<HostTensor>& args) {
    Instruction* x = any();
    Instruction* y = any();
    switch (pick(30)) {
      case 0: return b_.unary(Opcode::kNeg, x);
      case 1: return b_.unary(Opcode::kSign, x);
      case 2: return b_.unary(Opcode::kExp, b_.unary(Opcode::kTanh, x));
      case 3: return b_.unary(Opcode::kLog, positive(x));
      case 4: return b_.unary(Opcode::kLog1p, b_.unary(Opcode::kAbs, x));
      case 5: return b_.unary(Opcode::kLogistic, x);
      case 6: return b_.unary(Opcode::kSqrt, positive(x));
      case 7: return b_.unary(Opcode::kRsqrt, positive(x));
      case 8: return b_.unary(Opcode::kErf, x);
      case 9: return b_.binary(Opcode::kAdd, x, y);
      case 10: return b_.binary(Opcode::kSub, x, y);
      case 11: return b_.binary(Opcode::kMul, x, y);
      case 12: return b_.binary(Opcode::kDiv, x, positive(y));
      case 13: return b_.binary(Opcode::kPow, positive(x), b_.unary(Opcode::kTanh, y));
      case 14: return b_.binary(Opcode::kMax, x, y);
      case 15: return b_.binary(Opcode::kMin, x, b_.full(x->shape(), 0.25));
      case 16: {
        static const ir::Comparison kCmp[] = {ir::Comparison::kEq, ir::Comparison::kNe, ir::Comparison::kLt,
                                              ir::Comparison::kLe, ir::Comparison::kGt, ir::Comparison::kGe};
        return b_.select(b_.compare(kCmp[pick(6)], x, y), x, y);
      }
      case 17: return b_.convert(b_.convert(x, DType::kBF16), DType::kF32);
      case 18: return b_.convert(b_.convert(x, DType::kF16), DType::kF32);
      case 19: {  // integer arithmetic in the registers, division included
        Instruction* i = b_.convert(b_.binary(Opcode::kMul, x, b_.full(x->shape(), 7.0)), DType::kI32);
        Instruction* j = b_.convert(b_.binary(Opcode::kAdd, b_.unary(Opcode::kAbs, y), b_.full(y->shape(), 1.0)), DType::kI32);
        return b_.convert(b_.binary(Opcode::kDiv, i, j), DType::kF32);
      }
      case 20: return b_.convert(b_.convert(x, DType::kBool), DType::kF32);
      case 21: return b_.convert(b_.convert(x, DType::kF64), DType::kF32);
      case 22: return b_.unary(Opcode::kAbs, b_.binary(Opcode::kSub, x, leaf(args)));
      case 23: return b_.unary(Opcode::kExpm1, x);
      case 24: return b_.unary(pick(2) == 0 ? Opcode::kSin : Opcode::kCos, b_.binary(Opcode::kMul, x, y));
      // The discontinuous ops read leaves (exact data), so a GPU's libm (make_ptx_cases) cannot
      // move a value across one of their steps.
      case 25: {  // * 2.5 puts some values on halves, where round's ties go to even
        static const Opcode kRounding[] = {Opcode::kFloor, Opcode::kCeil, Opcode::kRound};
        Instruction* l = leaf(args);
        return b_.unary(kRounding[pick(3)], b_.binary(Opcode::kMul, l, b_.full(l->shape(), 2.5)));
      }
      case 26: return b_.binary(Opcode::kAtan2, x, y);
      case 27: {  // divisors of either sign, away from 0
        Instruction* d = positive(leaf(args));
        return b_.binary(Opcode::kMod, leaf(args), pick(2) == 0 ? d : b_.unary(Opcode::kNeg, d));
      }
      case 28: {  // integer mod in the registers, by 0 and by divisors of either sign
        Instruction* l = leaf(args);
        Instruction* m = leaf(args);
        Instruction* i = b_.convert(b_.binary(Opcode::kMul, l, b_.full(l->shape(), 9.0)), DType::kI32);
        Instruction* j = b_.convert(b_.binary(Opcode::kMul, m, b_.full(m->shape(), 4.0)), DType::kI32);
        return b_.convert(b_.binary(Opcode::kMod, i, j), DType::kF32);
      }
      default: return b_.unary(Opcode::kTanh, b_.binary(Opcode::kMul, x, y));
    }
  }

  std::mt19937& rng_;
  Builder& b_;
  Dims dims_;
  std::vector<Instruction*> values_;
};

inline Dims random_dims(std::mt19937& rng) {
  const int rank = std::uniform_int_distribution<int>(0, 4)(rng);
  static const int64_t kSizes[] = {1, 2, 3, 5, 7, 16, 17, 33};
  Dims d;
  for (int i = 0; i < rank; ++i) d.push_back(kSizes[std::uniform_int_distribution<int>(0, 7)(rng)]);
  return d;
}

}  // namespace kiln::testing
