// A sequence model's train step on the GPU, made of the index ops an LSTM's scan and a
// Transformer's embedding need: the embedding lookup (gather) and its gradient (scatter_add),
// a window of the sequence at a start given at run time (dynamic_slice; its gradient a
// dynamic_update_slice), the previous step's vectors (a pad that crops the end) concatenated
// with the current ones, then dense, softmax cross-entropy and Adam, all in one program.
// Without a GPU every op lowers and ptxas accepts the PTX; with one, three steps give the
// CPU's losses and weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "kiln/runtime/backend_registry.h"
#include "kiln/trace/function.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/nn.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/ops/shape.h"
#include "tests/testing/gpu_step.h"
#include "tests/testing/seed_training.h"

namespace kiln {
namespace {

// tokens i32[B, T] -> table[tokens] [B, T, D] -> window of W steps from `start` -> [window,
// window shifted one step later (zeros first)] [B, W, 2D] -> dense -> 10 logits.
class EmbeddingStep {
 public:
  static constexpr int64_t kBatch = 16, kSteps = 12, kWindow = 5, kVocab = 40, kWidth = 8;

  explicit EmbeddingStep(std::shared_ptr<runtime::Backend> backend) {
    std::mt19937 rng(3);
    params_.emplace_back("embedding/embeddings", testing::glorot_uniform({kVocab, kWidth}, kVocab, kWidth, rng));
    params_.emplace_back("dense/kernel", testing::glorot_uniform(kWindow * 2 * kWidth, 10, rng));
    params_.emplace_back("dense/bias", HostTensor(Shape(DType::kF32, {10})));
    adam_ = std::make_unique<testing::KerasAdam>(params_);
    step_ = std::make_unique<Function>("embedding_step", [this](const std::vector<Tensor>& in) {
      GradientTape tape;
      Tensor e = gather(params_[0], in[0], 0);
      Tensor w = dynamic_slice(e, {in[2], in[3], in[2]}, {kBatch, kWindow, kWidth});
      Tensor previous = pad(w, {0, 1, 0}, {0, -1, 0});
      Tensor h = reshape(concat({w, previous}, 2), {kBatch, kWindow * 2 * kWidth});
      Tensor logits = matmul(h, params_[1]) + params_[2];
      Tensor loss = mean(sparse_softmax_cross_entropy_with_logits(in[1], logits));
      std::vector<Tensor> grads = tape.gradient(loss, params_);
      adam_->apply(params_, grads);
      return std::vector<Tensor>{loss};
    }, FunctionOptions{.backend = backend});
  }

  // Tokens (some repeated within the batch, so the table's gradient adds duplicates) and
  // labels from `seed`; the window starts at `start` (clamped so it fits).
  float train_step(uint32_t seed, int32_t start) {
    std::mt19937 rng(seed);
    HostTensor tokens(Shape(DType::kI32, {kBatch, kSteps})), labels(Shape(DType::kI32, {kBatch}));
    for (int32_t& t : tokens.data<int32_t>()) t = std::uniform_int_distribution<int32_t>(0, kVocab - 1)(rng);
    for (int32_t& l : labels.data<int32_t>()) l = std::uniform_int_distribution<int32_t>(0, 9)(rng);
    return (*step_)({tokens, labels, HostTensor::scalar<int32_t>(0), HostTensor::scalar<int32_t>(start)})[0]
        .to_vector<float>()[0];
  }
  const Function& function() const { return *step_; }
  const std::vector<Variable>& params() const { return params_; }

 private:
  std::vector<Variable> params_;
  std::unique_ptr<testing::KerasAdam> adam_;
  std::unique_ptr<Function> step_;
};

TEST(CudaEmbeddingStepTest, EveryIndexOpOfTheStepHasAGpuKernelAndPtxasAcceptsThem) {
  EmbeddingStep step(runtime::make_backend("cpu"));
  step.train_step(1, 4);
  const runtime::Executable* exe = step.function().last_executable();
  ASSERT_NE(exe, nullptr);
  std::set<ir::Opcode> ops;
  for (const ir::Instruction* i : exe->lowered_module()->entry()->post_order()) ops.insert(i->opcode());
  for (ir::Opcode op : {ir::Opcode::kGather, ir::Opcode::kScatterAdd, ir::Opcode::kDynamicSlice,
                        ir::Opcode::kDynamicUpdateSlice, ir::Opcode::kPad, ir::Opcode::kConcatenate})
    EXPECT_TRUE(ops.count(op)) << ir::opcode_name(op) << " is no longer in the optimized step: the test checks less";
  testing::expect_step_lowers_for_sm90(exe, KILN_CUDA_PTXAS);
}

TEST(CudaEmbeddingStepTest, ThreeAdamStepsMatchTheCpu) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  EmbeddingStep on_gpu(gpu), on_cpu(runtime::make_backend("cpu"));
  for (int32_t step = 0; step < 3; ++step) {
    const int32_t start = step == 0 ? -3 : step == 1 ? 4 : 99;  // clamped to 0, as is, clamped to 7
    const float a = on_gpu.train_step(static_cast<uint32_t>(step), start);
    const float b = on_cpu.train_step(static_cast<uint32_t>(step), start);
    EXPECT_NEAR(a, b, 1e-4f * (1.0f + std::fabs(b))) << "step " << step;
  }
  testing::expect_same_variables(on_gpu.params(), on_cpu.params(), 1e-4f);
  const std::string steps = on_gpu.function().last_executable()->describe();
  EXPECT_NE(steps.find("scatter_add kernel"), std::string::npos) << steps;
}

}  // namespace
}  // namespace kiln
