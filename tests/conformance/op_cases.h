// The rows of the op conformance table (op_cases.cpp): each names an op, the dtypes it
// supports, the operand shapes its values are checked on (one output per shape variant, so a
// backend compiles each row and dtype once) and how its gradient is checked.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/builder.h"
#include "kiln/ir/module.h"
#include "kiln/trace/tensor.h"
#include "tests/testing/finite_difference.h"

namespace kiln::conformance {

/// What an operand holds: data of the row's dtype, or an operand of a fixed type.
enum class Role {
  kData,       // the row's dtype, uniform in [lo, hi) (integers in [int_lo, int_hi))
  kF32,        // f32 data whatever the row's dtype (convert's source)
  kIndex,      // i32 indices uniform in [0, int_hi)
  kPredicate,  // bool
  kKey,        // an i64 scalar key (rng_bits)
};

struct Operand {
  Dims dims;
  Role role = Role::kData;
  double lo = -1.0, hi = 1.0;
  int64_t int_lo = -8, int_hi = 8;
};

/// One shape variant: operands, attributes and (for ops that need it) the result dims.
struct Variant {
  std::vector<Operand> operands;
  ir::Attrs attrs;
  std::optional<Dims> declared;
};

struct OpCase {
  using BuildFn = std::function<ir::Instruction*(ir::Builder&, const std::vector<ir::Instruction*>&,
                                                 const Variant&, DType)>;
  std::string name;  // "add", "compare(lt)", "convert(to f32)", ...
  ir::Opcode op;
  /// The dtypes the op supports; every other must be rejected with a DTypeError.
  std::vector<DType> dtypes;
  std::vector<Variant> variants;
  /// The result dtype when it is not the row's (convert to f32); unset: the row's dtype.
  std::optional<DType> declared_dtype;
  /// Floating data drawn as small integers too (ties for compare).
  bool integer_valued = false;
  /// Scales the per-dtype tolerance (sums and contractions round differently per backend).
  double tol_scale = 1.0;
  /// Non-empty: the gradient is expected to be a CompileError containing this.
  std::string gradient_error;
  testing::GradCheckOptions grad_options;
  /// Values only: a special-input row of an op that has its main row (dtypes and gradients).
  bool values_only = false;
  /// Builds the op (default: Builder::add with the variant's attrs and declared shape).
  BuildFn build;

  /// A module with one output per variant, over parameters for every variant's operands.
  std::unique_ptr<ir::Module> module(DType t) const;
  /// Seeded random arguments for module(t).
  std::vector<HostTensor> arguments(DType t) const;
  double tolerance(DType t) const;
  std::string describe_variant(size_t k, DType t) const;
  /// f64 arguments of variant k for the gradient check, and the op applied to them through
  /// trace::emit (as a traced function calls it).
  std::vector<HostTensor> gradient_arguments(size_t k) const;
  Tensor apply(size_t k, const std::vector<Tensor>& xs) const;
};

/// Every row, built once (shapes drawn from fixed seeds).
const std::vector<OpCase>& op_cases();

/// |actual - expected| <= tol (1 + |expected|) elementwise, NaNs and infinities equal: "" or
/// the first mismatch.
std::string compare_values(const HostTensor& actual, const HostTensor& expected, double tol);

}  // namespace kiln::conformance
