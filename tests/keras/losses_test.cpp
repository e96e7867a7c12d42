// Losses against values computed by hand for small inputs (natural logs, 8 digits).
#include <gtest/gtest.h>

#include "tests/keras/keras_testing.h"

namespace kiln::keras {
namespace {

using testing::scalar;

Tensor f32(Dims dims, std::vector<float> v) { return Tensor::from_vector<float>(std::move(dims), v); }
Tensor i32(Dims dims, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(std::move(dims), v); }

TEST(LossesTest, SparseCategoricalCrossentropyFromLogitsMatchesHandValues) {
  // logsumexp([1,2,3]) - 3 = 0.40760596; logsumexp([1,1,1]) - 1 = log 3 = 1.09861229.
  Tensor logits = f32({2, 3}, {1, 2, 3, 1, 1, 1});
  SparseCategoricalCrossentropy loss({.from_logits = true});
  EXPECT_NEAR(scalar(loss(i32({2}, {2, 0}), logits)), (0.40760596 + 1.09861229) / 2, 1e-6);
}

TEST(LossesTest, SparseCategoricalCrossentropyOnProbabilitiesHonoursReductions) {
  // -log 0.7 = 0.35667494, -log 0.25 = 1.38629436.
  Tensor p = f32({2, 3}, {0.1f, 0.2f, 0.7f, 0.5f, 0.25f, 0.25f});
  Tensor y = i32({2}, {2, 1});
  EXPECT_NEAR(scalar(SparseCategoricalCrossentropy()(y, p)), 0.87148465, 1e-6);
  EXPECT_NEAR(scalar(SparseCategoricalCrossentropy({.reduction = "sum"})(y, p)), 1.74296930, 1e-6);
  std::vector<float> none = SparseCategoricalCrossentropy({.reduction = "none"})(y, p).to_vector<float>();
  ASSERT_EQ(none.size(), 2u);
  EXPECT_NEAR(none[1], 1.38629436, 1e-6);
}

TEST(LossesTest, CategoricalCrossentropyMatchesTheSparseFormOnOneHotLabels) {
  Tensor p = f32({2, 3}, {0.1f, 0.2f, 0.7f, 0.5f, 0.25f, 0.25f});
  EXPECT_NEAR(scalar(CategoricalCrossentropy()(f32({2, 3}, {0, 0, 1, 0, 1, 0}), p)), 0.87148465, 1e-6);
  Tensor logits = f32({2, 3}, {1, 2, 3, 1, 1, 1});
  EXPECT_NEAR(scalar(CategoricalCrossentropy({.from_logits = true})(f32({2, 3}, {0, 0, 1, 1, 0, 0}), logits)),
              0.75310913, 1e-6);
}

TEST(LossesTest, BinaryCrossentropyAveragesTheLastAxis) {
  // -log 0.9 = 0.10536052, -log 0.8 = 0.22314355, -log 0.6 = 0.51082562, -log 0.7 = 0.35667494.
  Tensor y = f32({2, 2}, {0, 1, 1, 0});
  Tensor p = f32({2, 2}, {0.1f, 0.8f, 0.6f, 0.3f});
  EXPECT_NEAR(scalar(BinaryCrossentropy()(y, p)), 0.29900116, 1e-6);
  // logits 0 (label 1): log 2 = 0.69314718; logit 2 (label 0): 2 + log1p(e^-2) = 2.12692801.
  EXPECT_NEAR(scalar(BinaryCrossentropy({.from_logits = true})(f32({1, 2}, {1, 0}), f32({1, 2}, {0, 2}))),
              1.41003760, 1e-6);
}

TEST(LossesTest, MeanSquaredErrorAveragesTheLastAxisThenTheBatch) {
  Tensor y = f32({2, 2}, {1, 2, 3, 4});
  Tensor p = f32({2, 2}, {1, 1, 1, 1});
  EXPECT_NEAR(scalar(MeanSquaredError()(y, p)), 3.5, 1e-6);  // (0.5 + 6.5) / 2
  EXPECT_EQ(MeanSquaredError({.reduction = "none"})(y, p).to_vector<float>(), (std::vector<float>{0.5f, 6.5f}));
}

TEST(LossesTest, UnknownNamesAndReductionsAreConfigErrors) {
  EXPECT_THROW(LossHandle("hinge_loss_typo"), ConfigError);
  EXPECT_THROW(MeanSquaredError({.reduction = "mean"}), ConfigError);
}

TEST(MetricsTest, AccuracyResolvesToTheSparseFormForIntegerLabels) {
  Accuracy acc;
  acc.update_state(i32({4}, {2, 0, 1, 1}), f32({4, 3}, {0, 1, 5, 9, 0, 0, 0, 3, 1, 4, 0, 0}));
  EXPECT_NEAR(scalar(acc.result()), 0.75, 1e-7);  // argmax 2, 0, 1, 0
  acc.reset_state();
  EXPECT_EQ(scalar(acc.result()), 0.0);
}

TEST(MetricsTest, MeanIsTheRunningMeanOfEveryValue) {
  Mean m;
  m.update(f32({2}, {1, 2}));
  m.update(f32({1}, {6}));
  EXPECT_NEAR(scalar(m.result()), 3.0, 1e-7);
}

}  // namespace
}  // namespace kiln::keras
