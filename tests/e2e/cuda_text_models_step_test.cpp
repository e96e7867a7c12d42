// The Keras LSTM text model's and the Transformer LM's whole train steps (examples/text_lstm.h,
// examples/transformer_lm.h) lowered for sm_90 without a GPU: the LSTM's scan is a while with
// the tracer's trip_count, both embed with gather. Each step is traced and optimized on the CPU
// from one synthetic batch (both backends run the same passes). While cuBLASLt's lowering takes
// one free and one contracting dim per operand only, the Dense layers over [batch, time,
// features] (and their weight gradients, contracting batch and time) are refused: the test
// then skips, naming them, and fails on any other op the error names.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "examples/text_lstm.h"
#include "examples/transformer_lm.h"
#include "tests/testing/gpu_step.h"

namespace kiln {
namespace {

constexpr int64_t kVocab = 40;

// Runs one fit step of `model` on a random batch of (tokens, next tokens), both i32 [batch, t].
void train_one_step(keras::Model& model, int64_t batch, int64_t t) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(kVocab - 1));
  std::vector<int32_t> x(static_cast<size_t>(batch * t)), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = token(rng), y[i] = token(rng);
  data::Dataset ds = data::Dataset::from_tensor_slices({HostTensor::from_vector<int32_t>({batch, t}, x),
                                                        HostTensor::from_vector<int32_t>({batch, t}, y)})
                         .batch(batch, true);
  model.compile({.optimizer = keras::Adam({.learning_rate = 1e-3}),
                 .loss = keras::SparseCategoricalCrossentropy({.from_logits = true})});
  model.fit(ds, {.epochs = 1, .steps_per_epoch = 1, .verbose = 0});
}

// The ops a "[cuda] ...: the cuda backend has no kernel yet for <ops>. Hint: ..." error names,
// when they are all matmuls over several free or contracting dims; the test fails on any other.
std::string known_gaps_only(const std::string& error) {
  const std::string head = "the cuda backend has no kernel yet for ", tail = ". Hint:";
  const size_t from = error.find(head), to = error.find(tail);
  if (from == std::string::npos || to == std::string::npos) {
    ADD_FAILURE() << "not the missing-kernel error: " << error;
    return "";
  }
  const std::string ops = error.substr(from + head.size(), to - from - head.size());
  const std::string rest = std::regex_replace(
      ops, std::regex("(dot_general|fusion\\(output\\)) \\(more than one contracting dim or free dim per operand\\)"
                      "( \\(x[0-9]+\\))?(, )?"),
      "");
  EXPECT_EQ(rest, "") << "ops other than the known matmul gap have no GPU kernel: " << error;
  return ops;
}

void expect_step_lowers_or_is_a_known_gap(const runtime::Executable* step) {
  try {
    testing::expect_step_lowers_for_sm90(step, KILN_CUDA_PTXAS);
  } catch (const CompileError& e) {
    const std::string ops = known_gaps_only(e.what());
    if (!::testing::Test::HasFailure()) GTEST_SKIP() << "needs matmuls over several free/contracting dims: " << ops;
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
  expect_step_lowers_or_is_a_known_gap(step);
}

TEST(CudaTextModelsStepTest, TheTransformerLmsTrainStepLowersForSm90) {
  const examples::transformer_lm::LmConfig cfg{.seq_len = 16, .d_model = 32, .num_heads = 2, .num_layers = 1};
  auto model = examples::transformer_lm::build_model(kVocab, cfg);
  train_one_step(*model, 4, cfg.seq_len);
  ASSERT_NE(model->train_function(), nullptr);
  expect_step_lowers_or_is_a_known_gap(model->train_function()->last_executable());
}

}  // namespace
}  // namespace kiln
