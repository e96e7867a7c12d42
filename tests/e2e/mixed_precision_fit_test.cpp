// Issue 16's accuracy bar: the seed MLP (5 epochs) and the Keras convnet (2 epochs) trained
// through fit under mixed_bfloat16 (bf16 compute, f32 weights, f32 loss) reach test accuracy
// within 0.3 percentage points of the same recipe in float32, on the real MNIST files. Each
// pair runs in one test so both models see the same data order and initial weights.
#include <gtest/gtest.h>

#include <cstdio>

#include "examples/mnist_cnn_model.h"
#include "examples/mnist_pipeline.h"
#include "kiln/keras/keras.h"

namespace kiln {
namespace {

// The test accuracy of the seed MLP (examples/mnist_mlp.cpp) after 5 epochs under `policy`;
// `optimizer` receives the model's optimizer after training.
double seed_mlp_accuracy(const std::string& policy, const datasets::mnist::Split& train,
                         const datasets::mnist::Split& test, keras::Optimizer** optimizer = nullptr,
                         std::unique_ptr<keras::models::Sequential>* keep = nullptr) {
  keras::mixed_precision::set_global_policy(policy);
  auto owned = std::make_unique<keras::models::Sequential>(std::vector<keras::LayerHandle>{
      keras::layers::Flatten({.input_shape = {28, 28}}),
      keras::layers::Dense(128, {.activation = "relu"}),
      keras::layers::Dense(10),
  });
  keras::models::Sequential& model = *owned;
  keras::mixed_precision::set_global_policy("float32");
  model.compile({.optimizer = keras::optimizers::Adam(),
                 .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  model.fit(examples::mnist_pipeline(train), {.epochs = 5, .steps_per_epoch = 60000 / 128, .verbose = 0});
  keras::Logs result =
      model.evaluate(examples::mnist_pipeline(test, {.batch_size = 100, .shuffle = false, .repeat = false}),
                     {.verbose = 0});
  std::printf("seed MLP, %s: test accuracy %.4f\n", policy.c_str(), result.at("accuracy"));
  if (optimizer != nullptr) *optimizer = model.optimizer();
  if (keep != nullptr) *keep = std::move(owned);
  return result.at("accuracy");
}

TEST(MixedPrecisionFitTest, SeedMlpUnderMixedBfloat16MatchesFloat32) {
  auto [train, test] = datasets::mnist::load_data();
  const double f32 = seed_mlp_accuracy("float32", train, test);
  const double bf16 = seed_mlp_accuracy("mixed_bfloat16", train, test);
  EXPECT_GE(f32, 0.97);
  EXPECT_NEAR(bf16, f32, 0.003);
}

// mixed_float16: compile wraps Adam in a LossScaleOptimizer; the f16 model trains to the
// float32 bar, and the scale has moved off its start (halved on the first overflowing steps,
// or doubled after 2000 finite ones) without collapsing.
TEST(MixedPrecisionFitTest, SeedMlpTrainsUnderMixedFloat16WithDynamicLossScaling) {
  auto [train, test] = datasets::mnist::load_data();
  keras::Optimizer* optimizer = nullptr;
  std::unique_ptr<keras::models::Sequential> model;
  const double f16 = seed_mlp_accuracy("mixed_float16", train, test, &optimizer, &model);
  auto* lso = dynamic_cast<keras::LossScaleOptimizer*>(optimizer);
  ASSERT_NE(lso, nullptr);
  const double scale = lso->dynamic_scale().storage().to_vector<double>()[0];
  std::printf("final loss scale %.0f after %lld steps\n", scale,
              static_cast<long long>(lso->iterations().storage().to_vector<int64_t>()[0]));
  EXPECT_GE(f16, 0.97);
  EXPECT_GE(scale, 1.0);
  EXPECT_GT(lso->iterations().storage().to_vector<int64_t>()[0], 5 * (60000 / 128) - 50) << "few skipped steps";
}

TEST(MixedPrecisionFitTest, KerasConvnetUnderMixedBfloat16MatchesFloat32) {
  constexpr int kEpochs = 2;
  constexpr int64_t kSteps = 60000 / examples::kMnistCnnBatch;
  auto [train, test] = datasets::mnist::load_data();
  double accuracy[2] = {0, 0};
  const char* policies[2] = {"float32", "mixed_bfloat16"};
  for (int i = 0; i < 2; ++i) {
    keras::mixed_precision::set_global_policy(policies[i]);
    std::unique_ptr<keras::Sequential> model =
        examples::make_mnist_cnn({.learning_rate = examples::mnist_cnn_learning_rate(kEpochs * kSteps)});
    keras::mixed_precision::set_global_policy("float32");
    model->fit(examples::mnist_pipeline(train, {.batch_size = examples::kMnistCnnBatch, .channel_dim = true}),
               {.epochs = kEpochs, .steps_per_epoch = kSteps, .verbose = 0});
    accuracy[i] = model->evaluate(examples::mnist_pipeline(test, {.batch_size = 100, .shuffle = false,
                                                                  .repeat = false, .channel_dim = true}),
                                  {.verbose = 0})
                      .at("accuracy");
    std::printf("Keras convnet, %s: test accuracy %.4f\n", policies[i], accuracy[i]);
  }
  EXPECT_NEAR(accuracy[1], accuracy[0], 0.003);
}

}  // namespace
}  // namespace kiln
