// The Keras LSTM text model's and the Transformer LM's whole train steps (examples/text_lstm.h,
// examples/transformer_lm.h) lowered for sm_90 without a GPU: the LSTM's scan is a while with
// the tracer's trip_count, both embed with gather. Each step is traced and optimized on the CPU
// from one synthetic batch (both backends run the same passes). The Dense layers over [batch,
// time, features] and their weight gradients (contracting batch and time) are cuBLASLt matmuls
// over collapsed dims. On a GPU: both models made under a MirroredStrategy over cuda:0 (what
// auto_detect picks with one GPU) train through Model::fit on it as on the CPU.
#include <gtest/gtest.h>

#include <random>

#include "examples/text_lstm.h"
#include "examples/transformer_lm.h"
#include "kiln/distribute/strategy.h"
#include "tests/testing/gpu_step.h"

namespace kiln {
namespace {

constexpr int64_t kVocab = 40;

// `steps` random batches of (tokens, next tokens), both i32 [batch, t].
data::Dataset token_batches(int64_t steps, int64_t batch, int64_t t) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(kVocab - 1));
  std::vector<int32_t> x(static_cast<size_t>(steps * batch * t)), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = token(rng), y[i] = token(rng);
  return data::Dataset::from_tensor_slices({HostTensor::from_vector<int32_t>({steps * batch, t}, x),
                                            HostTensor::from_vector<int32_t>({steps * batch, t}, y)})
      .batch(batch, true);
}

void compile_lm(keras::Model& model) {
  model.compile({.optimizer = keras::Adam({.learning_rate = 1e-3}),
                 .loss = keras::SparseCategoricalCrossentropy({.from_logits = true})});
}

// Runs one fit step of `model` on a random batch.
void train_one_step(keras::Model& model, int64_t batch, int64_t t) {
  compile_lm(model);
  model.fit(token_batches(1, batch, t), {.epochs = 1, .verbose = 0});
}

// The model `build` makes, trained three fit steps on the CPU and, from the same weights, made
// and trained under a MirroredStrategy over cuda:0: the same losses and weights (within `tol`:
// cuBLASLt and the GPU reductions sum in another order), and the GPU step ran matmuls on
// cuBLASLt (and, where `has_while`, the scan as a while).
void expect_gpu_fit_matches_the_cpu(const std::function<std::unique_ptr<keras::Model>()>& build, int64_t batch,
                                    int64_t t, bool has_while, float tol) {
  const data::Dataset ds = token_batches(3, batch, t);
  auto on_cpu = build();
  compile_lm(*on_cpu);
  const HostTensor tokens(Shape(DType::kI32, {batch, t}));
  on_cpu->predict(tokens);  // builds the layers
  auto gpu = std::make_shared<distribute::MirroredStrategy>(std::vector<std::string>{"cuda:0"});
  std::unique_ptr<keras::Model> on_gpu;
  {
    auto scope = gpu->scope();
    on_gpu = build();
    compile_lm(*on_gpu);
  }
  on_gpu->predict(tokens);
  on_gpu->set_weights(on_cpu->get_weights());
  const keras::History a = on_cpu->fit(ds, {.epochs = 1, .verbose = 0});
  const keras::History b = on_gpu->fit(ds, {.epochs = 1, .verbose = 0});
  const double la = a.history.at("loss").at(0), lb = b.history.at("loss").at(0);
  EXPECT_NEAR(lb, la, tol * (1 + std::fabs(la)));
  const std::vector<HostTensor> wa = on_cpu->get_weights(), wb = on_gpu->get_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    const std::vector<float> va = wa[i].to_vector<float>(), vb = wb[i].to_vector<float>();
    ASSERT_EQ(va.size(), vb.size()) << "weight " << i;
    for (size_t j = 0; j < va.size(); ++j) ASSERT_NEAR(vb[j], va[j], tol * (1 + std::fabs(va[j]))) << "weight " << i << "[" << j << "]";
  }
  const runtime::Executable* step = on_gpu->train_function()->last_executable();
  ASSERT_NE(step, nullptr);
  EXPECT_NE(step->describe().find("cublasLt"), std::string::npos) << step->describe();
  if (has_while) {
    EXPECT_NE(step->describe().find("while"), std::string::npos) << step->describe();
  }
}

TEST(CudaTextModelsStepTest, TheKerasLstmTextModelsTrainStepLowersForSm90) {
  const examples::text_lstm::TextLstmConfig cfg{.seq_len = 16, .embed_dim = 16, .units = 32};
  auto model = examples::text_lstm::build_model(kVocab, cfg);
  train_one_step(*model, 8, cfg.seq_len);
  ASSERT_NE(model->train_function(), nullptr);
  const runtime::Executable* step = model->train_function()->last_executable();
  ASSERT_NE(step, nullptr);
  // The scan is in the step the GPU gets (and the trip count is the tracer's).
  ASSERT_NE(step->lowered_module(), nullptr);
  bool has_while = false;
  for (const ir::Instruction* inst : step->lowered_module()->entry()->post_order())
    if (inst->opcode() == ir::Opcode::kWhile) has_while |= inst->attrs().trip_count == cfg.seq_len;
  EXPECT_TRUE(has_while);
  testing::expect_step_lowers_for_sm90(step, KILN_CUDA_PTXAS);
}

TEST(CudaTextModelsStepTest, TheTransformerLmsTrainStepLowersForSm90) {
  const examples::transformer_lm::LmConfig cfg{.seq_len = 16, .d_model = 32, .num_heads = 2, .num_layers = 1};
  auto model = examples::transformer_lm::build_model(kVocab, cfg);
  train_one_step(*model, 4, cfg.seq_len);
  ASSERT_NE(model->train_function(), nullptr);
  testing::expect_step_lowers_for_sm90(model->train_function()->last_executable(), KILN_CUDA_PTXAS);
}

TEST(CudaTextModelsFitTest, TheLstmTextModelTrainsOnOneGpuAsOnTheCpu) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  const examples::text_lstm::TextLstmConfig cfg{.seq_len = 16, .embed_dim = 16, .units = 32};
  expect_gpu_fit_matches_the_cpu([&] { return examples::text_lstm::build_model(kVocab, cfg); }, 8, cfg.seq_len, true,
                                 1e-3f);
}

TEST(CudaTextModelsFitTest, TheTransformerLmTrainsOnOneGpuAsOnTheCpu) {
  KILN_GPU_BACKEND_OR_SKIP(gpu);
  const examples::transformer_lm::LmConfig cfg{.seq_len = 16, .d_model = 32, .num_heads = 2, .num_layers = 1};
  expect_gpu_fit_matches_the_cpu([&] { return examples::transformer_lm::build_model(kVocab, cfg); }, 4, cfg.seq_len,
                                 false, 1e-3f);
}

}  // namespace
}  // namespace kiln
