// The CUDA backend on a real GPU: device memory and copies, generated loop kernels and
// cuBLASLt matmuls against the reference evaluator, variable updates in place, and the
// CompileError for ops it cannot run. Without a GPU every test skips, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "kiln/compiler/codegen/gpu_index_kernels.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/clone.h"
#include "kiln/runtime/backend_registry.h"
#include "kiln/runtime/cuda/cuda_backend.h"
#include "kiln/runtime/cuda/cublaslt_matmul_impl.h"
#include "kiln/runtime/cuda/cuda_device_impl.h"
#include "tests/testing/backend_conformance.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/gpu_backend.h"
#include "tests/testing/index_op_cases.h"

namespace kiln::cuda {
namespace {

using ir::Builder;
using ir::Instruction;
using ir::Opcode;

TEST(CudaDeviceTest, CopiesRoundTripAndMemoryIsNotHostAddressable) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  runtime::Device& gpu = backend->device();
  EXPECT_EQ(gpu.name(), "cuda:0");
  EXPECT_FALSE(gpu.host_addressable());
  for (DType t : {DType::kF32, DType::kBF16, DType::kI32, DType::kU8}) {
    HostTensor h = testing::random_tensor(Shape(t, {37, 129}), 7, -100, 100);
    runtime::Buffer b = gpu.to_device(h);
    HostTensor back = gpu.to_host(b);
    ASSERT_EQ(back.byte_size(), h.byte_size());
    EXPECT_EQ(std::memcmp(back.raw_data(), h.raw_data(), static_cast<size_t>(h.byte_size())), 0) << name(t);
    EXPECT_NE(back.raw_data(), h.raw_data());
    EXPECT_THROW(gpu.host_view(b), ValueError);
  }
  const runtime::AllocatorStats stats = gpu.allocator_stats();
  EXPECT_GE(stats.allocations, 4);
  EXPECT_GT(stats.peak_bytes_in_use, 0);
  EXPECT_GT(gpu.memory_bytes(), int64_t{1} << 30);
}

TEST(CudaBackendTest, FusedLoopKernelsMatchTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  std::string steps;
  // A broadcast, a transcendental, a select and a convert: one fused loop (or a few).
  testing::expect_matches_reference(
      {Shape(DType::kF32, {64, 33}), Shape(DType::kF32, {33})},
      [](Builder& b, auto& p) {
        Instruction* y = b.binary(Opcode::kMul, b.unary(Opcode::kTanh, p[0]), b.broadcast_in_dim(p[1], {64, 33}, {1}));
        Instruction* pos = b.compare(ir::Comparison::kGt, y, b.full(y->shape(), 0.0));
        Instruction* z = b.select(pos, y, b.binary(Opcode::kMul, y, b.full(y->shape(), 0.01)));
        return std::vector<Instruction*>{z, b.convert(z, DType::kBF16)};
      },
      {.tol = 1e-5, .backend = backend.get(), .steps = &steps});
  EXPECT_NE(steps.find("loop kernel"), std::string::npos) << steps;
}

TEST(CudaBackendTest, CublasLtMatmulsMatchTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  struct Case {
    Dims lhs, rhs;
    ir::DotDims dims;
    DType dtype = DType::kF32;
    std::string label;  // in the step's label
  };
  const Case cases[] = {
      {{96, 40}, {40, 72}, {.lhs_contracting = {1}, .rhs_contracting = {0}}, DType::kF32, "96x72x40"},  // x W
      {{40, 96}, {40, 72}, {.lhs_contracting = {0}, .rhs_contracting = {0}}, DType::kF32, "96x72x40"},  // x^T dy
      {{96, 72}, {40, 72}, {.lhs_contracting = {1}, .rhs_contracting = {1}}, DType::kF32, "96x40x72"},  // dy W^T
      // Attention's scores q k^T and their gradient (batch and heads leading), a batched x^T y.
      {{2, 3, 24, 16}, {2, 3, 20, 16},
       {.lhs_batch = {0, 1}, .rhs_batch = {0, 1}, .lhs_contracting = {3}, .rhs_contracting = {3}}, DType::kF32,
       "6 x 24x20x16"},
      {{4, 40, 24}, {4, 40, 16}, {.lhs_batch = {0}, .rhs_batch = {0}, .lhs_contracting = {1}, .rhs_contracting = {1}},
       DType::kF32, "4 x 24x16x40"},
      {{24, 40}, {40}, {.lhs_contracting = {1}, .rhs_contracting = {0}}, DType::kF32, "24x1x40"},  // matrix-vector
      {{40}, {40}, {.lhs_contracting = {0}, .rhs_contracting = {0}}, DType::kF32, "1x1x40"},        // a dot product
      {{33, 17}, {17, 9}, {.lhs_contracting = {1}, .rhs_contracting = {0}}, DType::kF64, "33x9x17, f64"},
      {{5, 0}, {0, 7}, {.lhs_contracting = {1}, .rhs_contracting = {0}}, DType::kF32, "zeros(empty matmul 5x7x0)"},
  };
  for (const Case& c : cases) {
    std::string steps;
    testing::expect_matches_reference(
        {Shape(c.dtype, c.lhs), Shape(c.dtype, c.rhs)},
        [&](Builder& b, auto& p) { return std::vector<Instruction*>{b.dot_general(p[0], p[1], c.dims)}; },
        {.tol = 1e-5, .backend = backend.get(), .steps = &steps});
    EXPECT_NE(steps.find(c.label), std::string::npos) << steps;
  }
}

TEST(CudaBackendTest, BiasAndReluEpiloguesRunInTheMatmul) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  for (DType t : {DType::kF32, DType::kBF16}) {
    std::string steps;
    int kernels = 0;
    testing::expect_matches_reference(
        {Shape(t, {130, 33}), Shape(t, {33, 65}), Shape(t, {65})},
        [](Builder& b, auto& p) {
          Instruction* y = b.dot_general(p[0], p[1], {.lhs_contracting = {1}, .rhs_contracting = {0}});
          y = b.binary(Opcode::kAdd, y, b.broadcast_in_dim(p[2], y->shape().dims(), {1}));
          return std::vector<Instruction*>{b.binary(Opcode::kMax, y, b.full(y->shape(), 0.0))};
        },
        {.tol = t == DType::kF32 ? 1e-5 : 2e-2, .backend = backend.get(), .kernel_count = &kernels, .steps = &steps});
    EXPECT_EQ(kernels, 1) << steps;
    EXPECT_NE(steps.find("+bias+relu"), std::string::npos) << steps;
  }
}

// dot + bias + tanh: cuBLASLt has no tanh epilogue, so the plain matmul runs on cuBLASLt and
// the bias and tanh as one loop kernel after it.
Instruction* dense_tanh(Builder& b, std::vector<Instruction*>& p) {
  Instruction* y = b.dot_general(p[0], p[1], {.lhs_contracting = {1}, .rhs_contracting = {0}});
  y = b.binary(Opcode::kAdd, y, b.broadcast_in_dim(p[2], y->shape().dims(), {1}));
  return b.unary(Opcode::kTanh, y);
}
const std::vector<Shape> kDenseShapes = {Shape(DType::kF32, {64, 33}), Shape(DType::kF32, {33, 17}), Shape(DType::kF32, {17})};

TEST(CudaBackendTest, EpiloguesCublasLtLacksRunAsALoopAfterTheMatmul) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  std::string steps;
  testing::expect_matches_reference(
      kDenseShapes, [](Builder& b, auto& p) { return std::vector<Instruction*>{dense_tanh(b, p)}; },
      {.tol = 1e-5, .backend = backend.get(), .steps = &steps});
  EXPECT_NE(steps.find("matmul(cublasLt, 64x17x33, f32)"), std::string::npos) << steps;
  EXPECT_NE(steps.find("loop kernel"), std::string::npos) << steps;
}

// The same lowering without a GPU: the output fusion the compiler forms (its passes run on the
// CPU backend, as in the step tests) lowers, the epilogue a loop kernel in the PTX.
TEST(CudaLoweringTest, EpiloguesCublasLtLacksLowerWithoutAGpu) {
  auto m = std::make_unique<ir::Module>("dense_tanh");
  Builder b(m->entry());
  std::vector<Instruction*> p;
  for (size_t i = 0; i < kDenseShapes.size(); ++i) p.push_back(b.parameter(kDenseShapes[i], str_cat("p", i)));
  m->entry()->set_outputs({dense_tanh(b, p)});
  auto exe = runtime::make_backend("cpu")->compile(std::move(m), {});
  int output_fusions = 0;
  for (const Instruction* i : exe->lowered_module()->entry()->post_order())
    output_fusions += i->opcode() == Opcode::kFusion && i->attrs().fusion_kind == ir::FusionKind::kOutput;
  ASSERT_EQ(output_fusions, 1) << "the compiler no longer fuses the epilogue: the test checks nothing";
  EXPECT_NE(lower_to_ptx(*exe->lowered_module(), 90).find(".entry k"), std::string::npos);
}

// The step arena: four dense+tanh layers over [256, 256] f32 (each a cuBLASLt matmul into a
// temporary, then tanh by a loop kernel) hold at most two 256 KiB temporaries at once, so the
// arena is two of them, not seven; the output keeps its own buffer (the peak counts the
// arguments too, as every backend's planned_peak_bytes does).
TEST(CudaLoweringTest, ValuesThatNeverLiveAtOnceShareTheStepArena) {
  auto m = std::make_unique<ir::Module>("dense_stack");
  Builder b(m->entry());
  Instruction* x = b.parameter(Shape(DType::kF32, {256, 256}), "x");
  Instruction* w = b.parameter(Shape(DType::kF32, {256, 256}), "w");
  for (int layer = 0; layer < 4; ++layer)
    x = b.unary(Opcode::kTanh, b.dot_general(x, w, {.lhs_contracting = {1}, .rhs_contracting = {0}}));
  m->entry()->set_outputs({x});
  auto exe = runtime::make_backend("cpu")->compile(std::move(m), {});
  const GpuLowering lowered = lower_without_gpu(*exe->lowered_module(), 90);
  constexpr int64_t kValue = 256 * 256 * 4;
  ASSERT_EQ(std::count(lowered.steps.begin(), lowered.steps.end(), '\n'), 8) << lowered.steps;  // 4 matmuls, 4 tanh
  // The workspace, the arena, the output, and the arguments x and w.
  EXPECT_EQ(lowered.peak_bytes, static_cast<int64_t>(CublasLtMatmul::kWorkspaceBytes) + 2 * kValue + kValue + 2 * kValue)
      << lowered.steps;
}

TEST(CudaBackendTest, AliasedOutputsUpdateTheArgumentInPlace) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  auto m = std::make_unique<ir::Module>("sgd");
  Builder b(m->entry());
  const Shape s(DType::kF32, {3, 4});
  Instruction* w = b.parameter(s, "w");
  Instruction* g = b.parameter(s, "g");
  m->entry()->set_outputs({b.binary(Opcode::kSub, w, b.binary(Opcode::kMul, g, b.full(s, 0.5)))});
  m->add_alias({.output_index = 0, .parameter_index = 0});
  auto exe = backend->compile(std::move(m), {});
  runtime::Device& gpu = backend->device();
  std::vector<float> w0(12), g0(12);
  for (size_t i = 0; i < 12; ++i) {
    w0[i] = static_cast<float>(i);
    g0[i] = static_cast<float>(i) - 6.0f;
  }
  runtime::Buffer wb = gpu.to_device(HostTensor::from_vector<float>({3, 4}, w0));
  runtime::Buffer gb = gpu.to_device(HostTensor::from_vector<float>({3, 4}, g0));
  for (int step = 0; step < 2; ++step) {
    runtime::Buffer args[] = {wb, gb};
    std::vector<runtime::Buffer> out = gpu.execute(*exe, args);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].shares_memory_with(wb));
  }
  const std::vector<float> w2 = gpu.to_host(wb).to_vector<float>();
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(w2[i], w0[i] - 2 * 0.5f * g0[i]);
}

// Copies queued back to back (more than the staging ring's slots, large enough that the DMA
// takes a while) and a program reading each one right after: the compute stream waits for each
// copy's CUevent on the GPU, and no staging slot is refilled while its copy still reads it, so
// every step sees exactly its own input.
TEST(CudaDeviceTest, ProgramsReadInputsStillBeingCopiedCorrectly) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  auto m = std::make_unique<ir::Module>("plus_one");
  Builder b(m->entry());
  const Shape s(DType::kF32, {1 << 22});  // 16 MiB per copy
  Instruction* x = b.parameter(s, "x");
  m->entry()->set_outputs({b.binary(Opcode::kAdd, x, b.full(s, 1.0))});
  auto exe = backend->compile(std::move(m), {});
  runtime::Device& gpu = backend->device();
  const int copies = 3 * CudaDevice::kStagingSlots;
  std::vector<runtime::Buffer> inputs;
  for (int i = 0; i < copies; ++i) {
    HostTensor h = HostTensor::uninitialized(s);
    for (float& v : h.data<float>()) v = static_cast<float>(i);
    inputs.push_back(gpu.to_device(h));  // the host tensor goes out of scope: the copy keeps it
  }
  for (int i = 0; i < copies; ++i) {
    runtime::Buffer args[] = {inputs[static_cast<size_t>(i)]};
    const HostTensor out = gpu.to_host(gpu.execute(*exe, args).at(0));
    const std::span<const float> v = out.data<float>();
    EXPECT_EQ(v.front(), static_cast<float>(i) + 1) << "copy " << i;
    EXPECT_EQ(v.back(), static_cast<float>(i) + 1) << "copy " << i;
    EXPECT_EQ(static_cast<size_t>(std::count(v.begin(), v.end(), static_cast<float>(i) + 1)), v.size()) << "copy " << i;
  }
  for (const runtime::Buffer& in : inputs) in.ready().wait();  // the host functions completed every copy
}

TEST(CudaBackendTest, ReductionsMatchTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  std::string steps;
  // Fused producers (exp, square), each axis position, all axes (a loss mean), and argmax.
  testing::expect_matches_reference(
      {Shape(DType::kF32, {16, 24, 5})},
      [](Builder& b, auto& p) {
        Instruction* e = b.unary(Opcode::kExp, p[0]);
        return std::vector<Instruction*>{b.reduce(Opcode::kReduceSum, e, {0}), b.reduce(Opcode::kReduceMax, p[0], {1, 2}),
                                         b.reduce(Opcode::kReduceMin, p[0], {1}),
                                         b.reduce(Opcode::kReduceSum, b.binary(Opcode::kMul, p[0], p[0]), {0, 1, 2}),
                                         b.argmax(p[0], 1), b.argmax(p[0], 2)};
      },
      {.tol = 1e-5, .backend = backend.get(), .steps = &steps});
  EXPECT_NE(steps.find("reduce_sum kernel"), std::string::npos) << steps;
}

// execute returns before the step ran: several steps, each reading the last one's output and
// updating a variable in place, queue on the compute stream with no host wait between them,
// their temporaries reused in stream order, and give the values of one step at a time.
TEST(CudaDeviceTest, StepsQueueWithoutHostWaitsAndGiveTheSameValues) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  auto m = std::make_unique<ir::Module>("queued");
  Builder b(m->entry());
  const Shape s(DType::kF32, {1 << 24});  // 64 MiB: each step takes the GPU a while
  Instruction* w = b.parameter(s, "w");
  Instruction* x = b.parameter(s, "x");
  Instruction* t = b.unary(Opcode::kTanh, b.binary(Opcode::kMul, x, b.full(s, 0.5)));
  Instruction* total = b.reduce(Opcode::kReduceSum, t, {0});
  m->entry()->set_outputs({b.binary(Opcode::kAdd, w, t), b.binary(Opcode::kAdd, t, b.broadcast_in_dim(total, s.dims(), {}))});
  m->add_alias({.output_index = 0, .parameter_index = 0});
  auto exe = backend->compile(std::move(m), {});
  runtime::Device& gpu = backend->device();
  HostTensor x0 = HostTensor::uninitialized(s);
  std::vector<float>::size_type i = 0;
  for (float& v : x0.data<float>()) v = static_cast<float>(i++ % 1000) * 1e-3f;
  const int kSteps = 8;
  auto run_steps = [&](bool wait_each) {
    runtime::Buffer wb = gpu.to_device(HostTensor::zeros(s)), xb = gpu.to_device(x0);
    std::vector<runtime::Buffer> out;
    bool queued = false;
    for (int step = 0; step < kSteps; ++step) {
      runtime::Buffer args[] = {wb, xb};
      out = gpu.execute(*exe, args);
      wb = out[0];
      xb = out[1];
      if (wait_each) gpu.to_host(xb);
      else queued = queued || !out[1].ready().ready();
    }
    if (!wait_each) {
      EXPECT_TRUE(queued) << "every step had finished when execute returned: it waited on the host";
    }
    return std::pair(gpu.to_host(wb), gpu.to_host(xb));
  };
  const auto [w_queued, x_queued] = run_steps(false);
  const auto [w_waited, x_waited] = run_steps(true);
  ASSERT_EQ(w_queued.byte_size(), w_waited.byte_size());
  EXPECT_EQ(std::memcmp(w_queued.raw_data(), w_waited.raw_data(), static_cast<size_t>(w_queued.byte_size())), 0);
  EXPECT_EQ(std::memcmp(x_queued.raw_data(), x_waited.raw_data(), static_cast<size_t>(x_queued.byte_size())), 0);
  EXPECT_GT(gpu.allocator_stats().cache_hits, 0) << "the steps' temporaries were not reused";
}

// Dropout masks match the CPU's only if the bits do: Philox, element by element.
TEST(CudaBackendTest, RngBitsAreTheReferenceBitsExactly) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  auto make = [] {
    auto m = std::make_unique<ir::Module>("rng");
    Builder b(m->entry());
    m->entry()->set_outputs({b.rng_bits(b.parameter(Shape(DType::kI64, {}), "key"), {77, 131})});
    return m;
  };
  for (int64_t key : {int64_t{0}, int64_t{12345}, int64_t{-3} << 40}) {
    std::vector<HostTensor> args = {HostTensor::scalar<int64_t>(key)};
    const HostTensor expected = ir::evaluate(*make(), args)[0];
    const HostTensor actual = backend->compile(make(), {})->run(args)[0];
    ASSERT_EQ(actual.byte_size(), expected.byte_size());
    EXPECT_EQ(std::memcmp(actual.raw_data(), expected.raw_data(), static_cast<size_t>(actual.byte_size())), 0) << key;
  }
}

// pad, concatenate, gather, scatter_add and the dynamic slices lower to generated kernels
// without a GPU, for every dtype (scatter_add of bf16, f16, u8 and bool through a 32-bit
// accumulator: loop kernels widen and narrow around the atomic kernel).
TEST(CudaLoweringTest, IndexOpsLowerToGeneratedKernelsWithoutAGpu) {
  testing::IndexOpCaseMaker maker(17);
  for (ir::Opcode op : testing::index_opcodes())
    for (DType t : testing::all_dtypes()) {
      const testing::IndexOpCase c = maker.make(op, t);
      std::string ptx;
      ASSERT_NO_THROW(ptx = lower_to_ptx(*c.module, 90)) << c.label();
      EXPECT_NE(ptx.find(str_cat(".entry ix", c.op().id())), std::string::npos) << c.label();
      const bool widened = op == ir::Opcode::kScatterAdd && codegen::scatter_accumulator(t) != t;
      EXPECT_EQ(ptx.find("_widen_s0") != std::string::npos, widened) << c.label();
    }
}

// A kernel takes at most 32 pointers: a concatenate of more operands is a CompileError that
// says so, not a launch with a truncated parameter list.
TEST(CudaLoweringTest, ConcatenatesOfTooManyOperandsAreACompileError) {
  auto m = std::make_unique<ir::Module>("wide_concat");
  Builder b(m->entry());
  std::vector<Instruction*> xs;
  for (int i = 0; i < 40; ++i) xs.push_back(b.parameter(Shape(DType::kF32, {2, 3}), str_cat("x", i)));
  m->entry()->set_outputs({b.concatenate(xs, 1)});
  KILN_EXPECT_ERROR(lower_to_ptx(*m, 90), CompileError,
                    "no kernel yet for concatenate (40 operands; a kernel takes at most 31)");
}

// Every index op x dtype on the GPU against the reference, and scatter_adds whose updates
// all hit a few rows, so thousands of atomic adds race on each element.
TEST(CudaBackendTest, IndexOpsMatchTheReference) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  testing::IndexOpCaseMaker maker(20261205);
  for (const testing::IndexOpCase& c : maker.all(/*per=*/2)) {
    std::vector<HostTensor> args = c.args;
    const HostTensor actual = backend->compile(ir::extract_module(*c.module->entry(), c.module->name()), {})->run(args)[0];
    testing::expect_index_op_result(c, actual);
  }
  // Float updates of k/4 (k < 5) sum exactly, so any order of the adds gives the reference's
  // value; integer ones (k) wrap in u8.
  constexpr int64_t kUpdates = 20000;
  HostTensor rows(Shape(DType::kF64, {kUpdates})), quarters(Shape(DType::kF64, {kUpdates, 8})), whole = quarters.clone();
  for (int64_t i = 0; i < kUpdates; ++i) rows.data<double>()[static_cast<size_t>(i)] = static_cast<double>(i % 3);
  for (int64_t i = 0; i < quarters.num_elements(); ++i) {
    whole.data<double>()[static_cast<size_t>(i)] = static_cast<double>(i % 5);
    quarters.data<double>()[static_cast<size_t>(i)] = static_cast<double>(i % 5) / 4;
  }
  for (DType t : testing::all_dtypes()) {
    testing::IndexOpCase c;
    c.module = std::make_unique<ir::Module>("contended_scatter_add");
    Builder b(c.module->entry());
    c.args = {testing::random_tensor(Shape(t, {3, 8}), 1, 0, 2), rows.astype(DType::kI32),
              (is_floating(t) ? quarters : whole).astype(t)};
    std::vector<Instruction*> p;
    for (const HostTensor& a : c.args) p.push_back(b.parameter(a.shape(), str_cat("p", p.size())));
    c.module->entry()->set_outputs({b.scatter_add(p[0], p[1], p[2], 0)});
    std::vector<HostTensor> args = c.args;
    const HostTensor actual = backend->compile(ir::extract_module(*c.module->entry(), "contended"), {})->run(args)[0];
    testing::expect_index_op_result(c, actual);
  }
}

TEST(CudaBackendTest, OpsWithoutAGpuKernelAreACompileErrorNamingThem) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  auto m = std::make_unique<ir::Module>("integer_matmul");
  Builder b(m->entry());
  Instruction* x = b.parameter(Shape(DType::kI32, {4, 8}), "x");
  Instruction* w = b.parameter(Shape(DType::kI32, {8, 3}), "w");
  m->entry()->set_outputs({b.dot_general(x, w, {.lhs_contracting = {1}, .rhs_contracting = {0}})});
  KILN_EXPECT_ERROR(backend->compile(std::move(m), {}), CompileError,
                    "[cuda] integer_matmul: the cuda backend has no kernel yet for dot_general (i32 x i32: cuBLASLt "
                    "multiplies f32, bf16, f16 or f64 operands of one dtype)");
}

TEST(CudaBackendTest, ProgramsOfAnotherBackendAreRefused) {
  KILN_GPU_BACKEND_OR_SKIP(backend);
  auto m = std::make_unique<ir::Module>("cpu_program");
  Builder b(m->entry());
  Instruction* x = b.parameter(Shape(DType::kF32, {4}), "x");
  m->entry()->set_outputs({b.unary(Opcode::kNeg, x)});
  auto cpu_exe = runtime::make_backend("cpu")->compile(std::move(m), {});
  runtime::Buffer arg = backend->device().to_device(HostTensor::from_vector<float>({4}, {1, 2, 3, 4}));
  runtime::Buffer args[] = {arg};
  KILN_EXPECT_ERROR(backend->device().execute(*cpu_exe, args), ValueError, "not compiled by the cuda backend");
}

}  // namespace
}  // namespace kiln::cuda
