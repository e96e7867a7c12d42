// Random cases of the index and data-movement ops (pad, concatenate, gather, scatter_add,
// dynamic_slice, dynamic_update_slice) for the GPU index kernels' tests: every dtype, ranks
// 1-4 (0 too for dynamic slices), empty dims, indices and starts out of range (negative too, so
// clamping shows), negative padding, duplicate scatter indices. Each case is a module whose
// only output is the op over parameters, with its arguments.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/reference_eval.h"
#include "tests/testing/random_loop_body.h"

namespace kiln::testing {

struct IndexOpCase {
  std::unique_ptr<ir::Module> module;
  std::vector<HostTensor> args;
  const ir::Instruction& op() const { return *module->entry()->outputs().at(0); }
  std::string label() const { return str_cat(op().shape(), " = ", ir::opcode_name(op().opcode()), " of ", op().operand(0)->shape()); }
};

inline const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> kAll = {DType::kF32, DType::kBF16, DType::kF16, DType::kF64,
                                          DType::kI32, DType::kI64, DType::kU8, DType::kBool};
  return kAll;
}

inline const std::vector<ir::Opcode>& index_opcodes() {
  static const std::vector<ir::Opcode> kOps = {ir::Opcode::kPad, ir::Opcode::kConcatenate, ir::Opcode::kGather,
                                               ir::Opcode::kScatterAdd, ir::Opcode::kDynamicSlice,
                                               ir::Opcode::kDynamicUpdateSlice};
  return kOps;
}

class IndexOpCaseMaker {
 public:
  explicit IndexOpCaseMaker(uint32_t seed) : rng_(seed) {}

  /// One random case of `op` over `dtype` values.
  IndexOpCase make(ir::Opcode op, DType dtype) {
    IndexOpCase c;
    c.module = std::make_unique<ir::Module>(str_cat(ir::opcode_name(op), "_case"));
    ir::Builder b(c.module->entry());
    const bool dynamic = op == ir::Opcode::kDynamicSlice || op == ir::Opcode::kDynamicUpdateSlice;
    const Dims dims = random_dims(uniform(dynamic ? 0 : 1, 4));
    auto param = [&](HostTensor value) {
      ir::Instruction* p = b.parameter(value.shape(), str_cat("p", c.args.size()));
      c.args.push_back(std::move(value));
      return p;
    };
    ir::Instruction* x = param(random_tensor(Shape(dtype, dims), rng_));
    ir::Instruction* out = nullptr;
    const int64_t axis = dims.empty() ? 0 : uniform(0, static_cast<int64_t>(dims.size()) - 1);
    switch (op) {
      case ir::Opcode::kPad: {
        Dims low(dims.size()), high(dims.size());
        for (size_t d = 0; d < dims.size(); ++d) {
          low[d] = uniform(-2, 3);
          high[d] = std::max(uniform(-2, 3), -dims[d] - low[d]);  // crops at most the whole dim
        }
        static const double kValues[] = {0.0, 2.5, -1.0, 7.0};
        out = b.pad(x, low, high, kValues[uniform(0, 3)]);
        break;
      }
      case ir::Opcode::kConcatenate: {
        std::vector<ir::Instruction*> xs = {x};
        for (int64_t k = uniform(0, 3); k > 0; --k) {
          Dims d = dims;
          d[static_cast<size_t>(axis)] = uniform(0, 4);
          xs.push_back(param(random_tensor(Shape(dtype, d), rng_)));
        }
        out = b.concatenate(xs, axis);
        break;
      }
      case ir::Opcode::kGather: case ir::Opcode::kScatterAdd: {
        // Indices from 3 below 0 to 3 past the end: clamped; more indices than rows: duplicates.
        const int64_t rows = dims[static_cast<size_t>(axis)];
        const DType index_dtype = uniform(0, 1) ? DType::kI64 : DType::kI32;
        HostTensor indices(Shape(DType::kF64, random_dims(uniform(0, 2))));
        for (double& v : indices.data<double>()) v = static_cast<double>(uniform(-3, rows + 2));
        ir::Instruction* i = param(indices.astype(index_dtype));
        if (op == ir::Opcode::kGather) {
          out = b.gather(x, i, axis);
        } else {
          Dims gathered(dims.begin(), dims.begin() + axis);
          for (int64_t d : indices.dims()) gathered.push_back(d);
          gathered.insert(gathered.end(), dims.begin() + axis + 1, dims.end());
          out = b.scatter_add(x, i, param(random_tensor(Shape(dtype, gathered), rng_)), axis);
        }
        break;
      }
      case ir::Opcode::kDynamicSlice: case ir::Opcode::kDynamicUpdateSlice: {
        Dims box(dims.size());
        std::vector<ir::Instruction*> starts;
        for (size_t d = 0; d < dims.size(); ++d) box[d] = uniform(0, dims[d]);
        ir::Instruction* update = op == ir::Opcode::kDynamicUpdateSlice ? param(random_tensor(Shape(dtype, box), rng_)) : nullptr;
        for (size_t d = 0; d < dims.size(); ++d) {
          HostTensor start(Shape(DType::kF64, {}));
          start.data<double>()[0] = static_cast<double>(uniform(-3, dims[d] + 3));
          starts.push_back(param(start.astype(uniform(0, 1) ? DType::kI64 : DType::kI32)));
        }
        out = update != nullptr ? b.dynamic_update_slice(x, update, starts) : b.dynamic_slice(x, starts, box);
        break;
      }
      default: break;
    }
    c.module->entry()->set_outputs({out});
    return c;
  }

  /// `per` cases of every index op over every dtype.
  std::vector<IndexOpCase> all(int per) {
    std::vector<IndexOpCase> cases;
    for (ir::Opcode op : index_opcodes())
      for (DType t : all_dtypes())
        for (int i = 0; i < per; ++i) cases.push_back(make(op, t));
    return cases;
  }

 private:
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  // Dims of 1-5, one in eight empty.
  Dims random_dims(int64_t rank) {
    Dims d(static_cast<size_t>(rank));
    for (int64_t& v : d) v = uniform(0, 7) == 0 ? 0 : uniform(1, 5);
    return d;
  }

  std::mt19937 rng_;
};

// `actual` against the reference: moves bit for bit; integer scatter_adds exactly; float ones
// within a tolerance (the GPU adds duplicates in no set order, and f32 in f32 where the
// reference sums in f64), scaled by the terms' size (up to 3) since sums cancel.
inline void expect_index_op_result(const IndexOpCase& c, const HostTensor& actual) {
  const HostTensor expected = ir::evaluate(*c.module, c.args)[0];
  ASSERT_EQ(actual.shape(), expected.shape()) << c.label();
  const DType t = expected.dtype();
  const bool float_sum = c.op().opcode() == ir::Opcode::kScatterAdd && is_floating(t);
  if (!float_sum) {
    EXPECT_EQ(std::memcmp(actual.raw_data(), expected.raw_data(), static_cast<size_t>(expected.byte_size())), 0)
        << c.label();
    return;
  }
  const double tol = t == DType::kBF16 ? 1.0 / 128 : t == DType::kF16 ? 1.0 / 1024 : 1e-5;
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], e[i], tol * (4 + std::fabs(e[i]))) << c.label() << " element " << i;
}

}  // namespace kiln::testing
