#include "kiln/runtime/reference/reference_backend.h"

#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "tests/testing/expect_error.h"

namespace kiln::runtime {
namespace {

using ir::Builder;
using ir::Opcode;

/// relu(x . w + b) with x: f32[2,3], w: f32[3,2] ("kernel"), b: f32[2].
std::unique_ptr<ir::Module> dense_module() {
  auto m = std::make_unique<ir::Module>("dense");
  Builder b(m->entry());
  b.set_source("dense_1");
  auto* x = b.parameter(Shape(DType::kF32, {2, 3}), "x");
  auto* w = b.parameter(Shape(DType::kF32, {3, 2}), "kernel");
  auto* bias = b.parameter(Shape(DType::kF32, {2}), "bias");
  auto* y = b.dot_general(x, w, {.lhs_contracting = {1}, .rhs_contracting = {0}});
  auto* z = b.binary(Opcode::kAdd, y, b.broadcast_in_dim(bias, {2, 2}, {1}));
  m->entry()->set_outputs({b.binary(Opcode::kMax, z, b.full(z->shape(), 0.0))});
  return m;
}

TEST(ReferenceBackendTest, RunsAModule) {
  auto backend = make_reference_backend();
  EXPECT_EQ(backend->name(), "reference");
  auto exe = backend->compile(dense_module(), {});
  std::vector<HostTensor> args = {HostTensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
                                  HostTensor::from_vector<float>({3, 2}, {1, -1, 0, -1, 1, -1}),
                                  HostTensor::from_vector<float>({2}, {0.5f, 100})};
  auto out = exe->run(args);
  ASSERT_EQ(out.size(), 1u);
  // x.w = [[4, -6], [10, -15]]; + bias = [[4.5, 94], [10.5, 85]]; relu keeps them.
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{4.5f, 94, 10.5f, 85}));
  EXPECT_EQ(exe->kernel_count(), 5);  // dot, broadcast, add, broadcast of 0, max
  EXPECT_GT(exe->planned_peak_bytes(), 0);
  EXPECT_NE(exe->describe().find("dot_general"), std::string::npos);
  EXPECT_NE(exe->describe().find("# dense_1"), std::string::npos);
}

TEST(ReferenceBackendTest, UpdatesAliasedArgumentsInPlace) {
  auto m = std::make_unique<ir::Module>("sgd");
  Builder b(m->entry());
  auto* w = b.parameter(Shape(DType::kF32, {3}), "w");
  auto* g = b.parameter(Shape(DType::kF32, {3}), "g");
  auto* step = b.binary(Opcode::kMul, b.full(g->shape(), 0.5), g);
  m->entry()->set_outputs({b.binary(Opcode::kSub, w, step), b.reduce(Opcode::kReduceSum, w, {0})});
  m->add_alias({.output_index = 0, .parameter_index = 0});
  auto exe = make_reference_backend()->compile(std::move(m), {});

  std::vector<HostTensor> args = {HostTensor::from_vector<float>({3}, {1, 2, 3}),
                                  HostTensor::from_vector<float>({3}, {2, 2, 2})};
  const void* storage = args[0].raw_data();
  auto out = exe->run(args);
  EXPECT_TRUE(out[0].shares_storage_with(args[0]));
  EXPECT_EQ(args[0].raw_data(), storage);
  EXPECT_EQ(args[0].to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(out[1].to_vector<float>()[0], 6.f);  // read before the update
  exe->run(args);
  EXPECT_EQ(args[0].to_vector<float>(), (std::vector<float>{-1, 0, 1}));
}

TEST(ReferenceBackendTest, ArgumentShapeErrorNamesTheParameter) {
  auto exe = make_reference_backend()->compile(dense_module(), {.label = "train_step"});
  std::vector<HostTensor> args = {HostTensor(Shape(DType::kF32, {2, 3})), HostTensor(Shape(DType::kF32, {2, 3})),
                                  HostTensor(Shape(DType::kF32, {2}))};
  KILN_EXPECT_ERROR(exe->run(args), ShapeError,
                    "[train_step] parameter \"kernel\" (argument 1) expected f32[3,2], received f32[2,3]");
  args.pop_back();
  KILN_EXPECT_ERROR(exe->run(args), ShapeError, "expected 3 arguments, received 2");
}

TEST(ReferenceBackendTest, UnsupportedOpsGiveOneCompileErrorNamingEachWithItsSource) {
  auto m = std::make_unique<ir::Module>("cnn");
  Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF32, {1, 4, 4, 1}), "x");
  auto* w = b.parameter(Shape(DType::kF32, {2, 2, 1, 1}), "w");
  b.set_source("conv2d_1");
  auto* c1 = b.convolution(x, w, {.padding_high = {1, 1}});
  b.set_source("max_pooling2d");
  auto* p = b.reduce_window(c1, ir::ReduceKind::kMax,
                            {.size = {1, 2, 2, 1}, .strides = {1, 2, 2, 1}, .padding_low = {0, 0, 0, 0},
                             .padding_high = {0, 0, 0, 0}});
  b.set_source("conv2d_2");
  auto* c2 = b.convolution(p, w, {.padding_high = {1, 1}});
  b.set_source("dense");
  m->entry()->set_outputs({b.unary(Opcode::kTanh, c2)});
  auto backend = make_reference_backend({Opcode::kConvolution, Opcode::kReduceWindow});
  try {
    backend->compile(std::move(m), {});
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[reference backend] cannot compile module @cnn: 3 ops are not supported"),
              std::string::npos) << msg;
    EXPECT_NE(msg.find("convolution f32[1,4,4,1] from conv2d_1: this reference backend was made without "
                       "convolution. Hint: run the model on the 'cpu' backend"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reduce_window f32[1,2,2,1] from max_pooling2d"), std::string::npos) << msg;
    EXPECT_NE(msg.find("from conv2d_2"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("tanh"), std::string::npos) << msg;
  }
}

TEST(ReferenceBackendTest, UnsupportedOpsInsideFusionBodiesAreReported) {
  auto m = std::make_unique<ir::Module>("fused");
  ir::Computation* body = m->add_computation("fused_exp");
  Builder fb(body);
  fb.set_source("activation");
  body->set_outputs({fb.unary(Opcode::kExp, fb.parameter(Shape(DType::kF32, {2}), "p"))});
  Builder b(m->entry());
  auto* x = b.parameter(Shape(DType::kF32, {2}), "x");
  ir::Attrs attrs;
  attrs.body = body;
  Shape s(DType::kF32, {2});
  m->entry()->set_outputs({b.add(Opcode::kFusion, {x}, attrs, &s)});
  KILN_EXPECT_ERROR(make_reference_backend({Opcode::kExp})->compile(std::move(m), {}), CompileError,
                    "exp f32[2] from activation");
}

TEST(ReferenceBackendTest, CompileRejectsAMalformedModule) {
  auto m = dense_module();
  m->add_alias({.output_index = 0, .parameter_index = 9});
  KILN_EXPECT_ERROR(make_reference_backend()->compile(std::move(m), {}), InternalError, "names a missing parameter");
}

}  // namespace
}  // namespace kiln::runtime
