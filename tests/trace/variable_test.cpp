// Variables: one parameter per variable per trace, assignment as an aliased output updated in
// place (storage identity kept), reads after an assign, and eager assignment.
#include "kiln/trace/variable.h"

#include <gtest/gtest.h>

#include "kiln/runtime/reference/reference_backend.h"
#include "kiln/trace/function.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "tests/testing/expect_error.h"

namespace kiln {
namespace {

using Xs = std::vector<Tensor>;

FunctionOptions reference() { return {.backend = runtime::make_reference_backend()}; }

TEST(VariableTest, AssignInAFunctionUpdatesTheStorageInPlace) {
  Variable v("counter", HostTensor::from_vector<float>({3}, {1, 2, 3}));
  HostTensor held = v.storage();  // shares storage
  const void* address = v.storage().raw_data();
  Function step = function("step", [&](const Xs& x) {
    v.assign_add(x[0]);
    return reduce_sum(v.read());
  }, reference());
  HostTensor delta = HostTensor::from_vector<float>({3}, {1, 1, 1});
  EXPECT_FLOAT_EQ(step({delta})[0].to_vector<float>()[0], 9.0f);
  EXPECT_FLOAT_EQ(step({delta})[0].to_vector<float>()[0], 12.0f);
  EXPECT_EQ(v.storage().raw_data(), address);
  EXPECT_TRUE(held.shares_storage_with(v.storage()));
  EXPECT_EQ(held.to_vector<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(step.trace_count(), 1);
}

TEST(VariableTest, OneParameterPerVariableAndAnAliasPerAssignment) {
  Variable w("w", HostTensor::from_vector<float>({2}, {1, 2}));
  Variable frozen("frozen", HostTensor::from_vector<float>({2}, {5, 5}), /*trainable=*/false);
  Function step = function("step", [&](const Xs& x) {
    Tensor a = w.read() * x[0];
    Tensor b = w.read() + frozen;  // second read of w: same parameter
    w.assign(a + b);
    return reduce_sum(a);
  }, reference());
  step({HostTensor::from_vector<float>({2}, {2, 2})});
  const std::string& ir = step.last_ir();
  EXPECT_NE(ir.find("parameter(1) \"w\""), std::string::npos) << ir;
  EXPECT_NE(ir.find("parameter(2) \"frozen\""), std::string::npos) << ir;
  EXPECT_EQ(ir.find("parameter(3)"), std::string::npos) << ir;
  EXPECT_NE(ir.find("aliases(output 1 -> parameter 1)"), std::string::npos) << ir;
  EXPECT_EQ(w.storage().to_vector<float>(), (std::vector<float>{8, 11}));
  EXPECT_EQ(frozen.storage().to_vector<float>(), (std::vector<float>{5, 5}));
}

TEST(VariableTest, ReadsAfterAnAssignInTheSameTraceSeeTheNewValue) {
  Variable v("v", HostTensor::from_vector<float>({2}, {1, 2}));
  Function step = function("step", [&](const Xs&) -> Xs {
    v.assign(v.read() * 10.0);
    return {v.read() + 1.0};
  }, reference());
  EXPECT_EQ(step({})[0].to_vector<float>(), (std::vector<float>{11, 21}));
  EXPECT_EQ(v.storage().to_vector<float>(), (std::vector<float>{10, 20}));
}

TEST(VariableTest, EagerAssignWritesTheSameStorage) {
  Variable v("v", HostTensor::from_vector<float>({2}, {1, 2}));
  const void* address = v.storage().raw_data();
  Tensor snapshot = v.read();
  v.assign(Tensor::from_vector<double>({2}, {3.5, 4.5}));  // converts to f32
  EXPECT_EQ(v.storage().raw_data(), address);
  EXPECT_EQ(v.storage().to_vector<float>(), (std::vector<float>{3.5f, 4.5f}));
  EXPECT_EQ(snapshot.to_vector<float>(), (std::vector<float>{1, 2})) << "reads are snapshots";
  v.assign_sub(Tensor::from_vector<float>({2}, {0.5f, 0.5f}));
  EXPECT_EQ(v.storage().to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST(VariableTest, AssigningAnotherShapeIsAShapeErrorNamingTheVariable) {
  Variable v("kernel", HostTensor(Shape(DType::kF32, {2, 3})));
  KILN_EXPECT_ERROR(v.assign(Tensor(HostTensor(Shape(DType::kF32, {3, 2})))), ShapeError,
                    "[variable 'kernel'] assign expects f32[2,3], received f32[3,2]");
}

}  // namespace
}  // namespace kiln
