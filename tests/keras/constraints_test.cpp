// Constraints and regularizers: Keras's formulas, and where Kiln does not build them, errors.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/keras/constraints.h"
#include "kiln/keras/layers/layer.h"
#include "kiln/keras/regularizers.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

// Verify the constraint and regularizer formulas against hand-computed values.
TEST(ConstraintsTest, ConstraintsAndRegularizersFollowKeras) {
  // w = [[3, 0], [4, -1]]: column norms 5 and 1.
  const Tensor w(HostTensor::from_vector<float>({2, 2}, {3, 0, 4, -1}));
  const std::vector<float> max_norm = Constraint::from_config("MaxNorm", R"({"max_value": 2, "axis": 0})")(w).to_vector<float>();
  EXPECT_NEAR(max_norm[0], 3 * 2 / (5 + 1e-7), 1e-6);
  EXPECT_NEAR(max_norm[3], -1 * 1 / (1 + 1e-7), 1e-6);
  const std::vector<float> non_neg = Constraint::from_config("NonNeg")(w).to_vector<float>();
  EXPECT_EQ(non_neg, (std::vector<float>{3, 0, 4, 0}));
  const std::vector<float> unit = Constraint::from_config("unit_norm", R"({"axis": 1})")(w).to_vector<float>();
  EXPECT_NEAR(unit[0], 1.0, 1e-6);  // row 0 is [3, 0]
  const std::vector<float> mm =
      Constraint::from_config("MinMaxNorm", R"({"min_value": 2, "max_value": 4, "rate": 0.5, "axis": 0})")(w).to_vector<float>();
  EXPECT_NEAR(mm[0], 3 * (0.5 * 4 + 0.5 * 5) / (5 + 1e-7), 1e-5);
  EXPECT_NEAR(mm[1], 0.0, 1e-6);
  const Regularizer l1l2 = Regularizer::from_config("L1L2", R"({"l1": 0.5, "l2": 0.25})");
  EXPECT_NEAR(l1l2(w).to_vector<float>()[0], 0.5 * 8 + 0.25 * 26, 1e-5);
  EXPECT_NEAR(Regularizer::from_config("l2")(w).to_vector<float>()[0], 0.01 * 26, 1e-6);
  // Where Kiln does not build them, they are an error naming the layer and key, never dropped.
  KILN_EXPECT_ERROR(
      layer_from_config("BatchNormalization", R"({"name": "bn", "gamma_regularizer": {"class_name": "L2", "config": {}}})"),
      ConfigError, "[bn] config key 'gamma_regularizer'");
  KILN_EXPECT_ERROR(layer_from_config("Embedding", R"({"name": "emb", "input_dim": 5, "output_dim": 2,
                                                      "embeddings_constraint": {"class_name": "MaxNorm"}})"),
                    ConfigError, "[emb] config key 'embeddings_constraint'");
}

}  // namespace
}  // namespace kiln::keras
