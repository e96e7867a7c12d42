// Losses against values computed by hand for small inputs (natural logs, 8 digits).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"
#include "tests/testing/finite_difference.h"

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

TEST(LossesTest, RankOneLabelsMeetAColumnOfPredictionsAsKerasMatchesThem) {
  // Labels (3,) against predictions (3, 1) gain the axis (Keras's squeeze_or_expand_to_same_rank)
  // instead of broadcasting to (3, 3): -(log 0.9 + log 0.8 + log 0.6) / 3 = 0.27977656.
  Tensor p = f32({3, 1}, {0.9f, 0.2f, 0.6f});
  EXPECT_NEAR(scalar(BinaryCrossentropy()(f32({3}, {1, 0, 1}), p)), 0.27977656, 1e-6);
  EXPECT_NEAR(scalar(MeanSquaredError()(f32({3}, {1, 0, 1}), p)), (0.01 + 0.04 + 0.16) / 3, 1e-6);
}

TEST(LossesTest, MeanSquaredErrorAveragesTheLastAxisThenTheBatch) {
  Tensor y = f32({2, 2}, {1, 2, 3, 4});
  Tensor p = f32({2, 2}, {1, 1, 1, 1});
  EXPECT_NEAR(scalar(MeanSquaredError()(y, p)), 3.5, 1e-6);  // (0.5 + 6.5) / 2
  EXPECT_EQ(MeanSquaredError({.reduction = "none"})(y, p).to_vector<float>(), (std::vector<float>{0.5f, 6.5f}));
}

TEST(LossesTest, AMaskedLossIsTheMeanOverTheKeptSteps) {
  // Per-step MSE of a (1, 3, 2) sequence: errors (1, 1), (2, 0), (3, 3) -> 1, 2, 9. Keras
  // 2.11+/3: mean over the kept steps (1 + 2) / 2, not over all three ((1 + 2 + 0) / 3).
  Tensor y = f32({1, 3, 2}, {0, 0, 0, 0, 0, 0});
  Tensor p = f32({1, 3, 2}, {1, 1, 2, 0, 3, 3});
  Tensor mask = cast(i32({1, 3}, {1, 1, 0}), DType::kBool);
  EXPECT_NEAR(scalar(MeanSquaredError()(y, p)), 4.0, 1e-6);
  EXPECT_NEAR(scalar(MeanSquaredError().weighted(y, p, Tensor(), mask)), 1.5, 1e-6);
  EXPECT_NEAR(scalar(MeanSquaredError({.reduction = "sum"}).weighted(y, p, Tensor(), mask)), 3.0, 1e-6);
  EXPECT_EQ(MeanSquaredError({.reduction = "none"}).weighted(y, p, Tensor(), mask).to_vector<float>(), (std::vector<float>{1, 2, 0}));
  // Nothing kept: 0 (Keras's divide_no_nan), not NaN.
  Tensor none_kept = cast(i32({1, 3}, {0, 0, 0}), DType::kBool);
  EXPECT_EQ(scalar(MeanSquaredError().weighted(y, p, Tensor(), none_kept)), 0.0);
  KILN_EXPECT_ERROR(MeanSquaredError().weighted(y, p, Tensor(), Tensor::from_vector<float>({1, 2}, {1, 1})), ShapeError,
                    "do not broadcast to the values f32[1,3]");
}

TEST(LossesTest, SampleWeightsMultiplyTheLossesAndAMaskCountsTheKeptSteps) {
  // Per-step MSE 1, 2, 9 (as above), step weights 3, 0.5, 7. Keras: without a mask the weighted
  // sum over all 3 values (not over the weights' sum); with one, sample_weight * mask over the 2
  // kept steps.
  Tensor y = f32({1, 3, 2}, {0, 0, 0, 0, 0, 0});
  Tensor p = f32({1, 3, 2}, {1, 1, 2, 0, 3, 3});
  Tensor w = f32({1, 3}, {3, 0.5, 7});
  Tensor mask = cast(i32({1, 3}, {1, 1, 0}), DType::kBool);
  EXPECT_NEAR(scalar(MeanSquaredError().weighted(y, p, w, Tensor())), (3 + 1 + 63) / 3.0, 1e-5);
  EXPECT_NEAR(scalar(MeanSquaredError().weighted(y, p, w, mask)), (3 + 1) / 2.0, 1e-6);
  EXPECT_NEAR(scalar(MeanSquaredError({.reduction = "sum"}).weighted(y, p, w, mask)), 4.0, 1e-6);
  // One weight per sample broadcasts over its steps.
  EXPECT_NEAR(scalar(MeanSquaredError().weighted(y, p, f32({1}, {0.5}), mask)), 0.75, 1e-6);
  KILN_EXPECT_ERROR(MeanSquaredError().weighted(y, p, f32({1, 2}, {1, 1}), Tensor()), ShapeError,
                    "sample weights f32[1,2] do not broadcast");
}

// The catalogue against the formulas written out per row in double, on inputs that visit each
// branch (|e| on both sides of Huber's delta, KL's clip, hinge margins on both sides).
struct Rows {
  int64_t rows, cols;
  std::vector<double> y, p;
  double y_at(int64_t r, int64_t c) const { return y[static_cast<size_t>(r * cols + c)]; }
  double p_at(int64_t r, int64_t c) const { return p[static_cast<size_t>(r * cols + c)]; }
};

Rows sample_rows() {
  return {2, 3, {0.0, 1.0, 0.0, 0.2, 0.5, 0.3}, {0.1, 0.7, 2.5, 0.6, 0.25, 4.0}};
}

// Per row: the reference value of row r.
using RowFn = std::function<double(const Rows&, int64_t)>;

double row_mean(const Rows& d, int64_t r, const std::function<double(double, double)>& f) {
  double s = 0;
  for (int64_t c = 0; c < d.cols; ++c) s += f(d.y_at(r, c), d.p_at(r, c));
  return s / static_cast<double>(d.cols);
}

struct CatalogueCase {
  const char* name;
  LossHandle loss;
  RowFn reference;
};

std::vector<CatalogueCase> catalogue() {
  const double eps = 1e-7;
  auto clip = [](double v, double lo, double hi) { return std::min(std::max(v, lo), hi); };
  // Keras converts {0, 1} labels to {-1, 1} only when every label is 0 or 1: the sample's
  // second row is not, so no conversion happens anywhere in it.
  auto hinge_row = [](const Rows& d, int64_t r, bool squared) {
    return row_mean(d, r, [&](double y, double p) {
      const double h = std::max(1 - y * p, 0.0);
      return squared ? h * h : h;
    });
  };
  return {
      {"mae", MeanAbsoluteError(), [](const Rows& d, int64_t r) { return row_mean(d, r, [](double y, double p) { return std::fabs(p - y); }); }},
      {"mape", MeanAbsolutePercentageError(),
       [=](const Rows& d, int64_t r) {
         return 100 * row_mean(d, r, [=](double y, double p) { return std::fabs((y - p) / std::max(std::fabs(y), eps)); });
       }},
      {"msle", MeanSquaredLogarithmicError(),
       [=](const Rows& d, int64_t r) {
         return row_mean(d, r, [=](double y, double p) {
           const double e = std::log(std::max(p, eps) + 1) - std::log(std::max(y, eps) + 1);
           return e * e;
         });
       }},
      {"log_cosh", LogCosh(), [](const Rows& d, int64_t r) { return row_mean(d, r, [](double y, double p) { return std::log(std::cosh(p - y)); }); }},
      {"kl_divergence", KLDivergence(),
       [=](const Rows& d, int64_t r) {
         return d.cols * row_mean(d, r, [=](double y, double p) {
           const double yc = clip(y, eps, 1), pc = clip(p, eps, 1);
           return yc * std::log(yc / pc);
         });
       }},
      {"hinge", Hinge(), [=](const Rows& d, int64_t r) { return hinge_row(d, r, false); }},
      {"squared_hinge", SquaredHinge(), [=](const Rows& d, int64_t r) { return hinge_row(d, r, true); }},
      {"categorical_hinge", CategoricalHinge(),
       [](const Rows& d, int64_t r) {
         double pos = 0, neg = -1e300;
         for (int64_t c = 0; c < d.cols; ++c) {
           pos += d.y_at(r, c) * d.p_at(r, c);
           neg = std::max(neg, (1 - d.y_at(r, c)) * d.p_at(r, c));
         }
         return std::max(neg - pos + 1, 0.0);
       }},
      {"poisson", Poisson(),
       [=](const Rows& d, int64_t r) {
         return row_mean(d, r, [=](double y, double p) { return p - y * std::log(p + eps); });
       }},
      {"huber delta 1", Huber(),
       [](const Rows& d, int64_t r) {
         return row_mean(d, r, [](double y, double p) {
           const double e = std::fabs(p - y);
           return e <= 1 ? 0.5 * e * e : e - 0.5;
         });
       }},
      {"huber delta 0.3", Huber({.delta = 0.3}),
       [](const Rows& d, int64_t r) {
         return row_mean(d, r, [](double y, double p) {
           const double e = std::fabs(p - y);
           return e <= 0.3 ? 0.5 * e * e : 0.3 * (e - 0.15);
         });
       }},
      {"cosine_similarity", CosineSimilarity(),
       [](const Rows& d, int64_t r) {
         double yy = 0, pp = 0, yp = 0;
         for (int64_t c = 0; c < d.cols; ++c) {
           yy += d.y_at(r, c) * d.y_at(r, c);
           pp += d.p_at(r, c) * d.p_at(r, c);
           yp += d.y_at(r, c) * d.p_at(r, c);
         }
         return -yp / std::sqrt(yy) / std::sqrt(pp);
       }},
  };
}

Tensor f64(Dims dims, std::vector<double> v) { return Tensor::from_vector<double>(std::move(dims), v); }

TEST(LossesTest, TheCatalogueMatchesItsFormulasRowByRow) {
  const Rows d = sample_rows();
  for (const CatalogueCase& c : catalogue()) {
    Tensor y = f64({d.rows, d.cols}, d.y), p = f64({d.rows, d.cols}, d.p);
    const std::vector<double> per_row = LossHandle(c.loss)->call(y, p).to_vector<double>();
    ASSERT_EQ(per_row.size(), 2u) << c.name;
    for (int64_t r = 0; r < d.rows; ++r)
      EXPECT_NEAR(per_row[static_cast<size_t>(r)], c.reference(d, r), 1e-12 * (1 + std::fabs(c.reference(d, r))))
          << c.name << " row " << r;
    // The default reduction is the mean over the batch, in f32 too.
    Tensor y32 = cast(y, DType::kF32), p32 = cast(p, DType::kF32);
    const double mean = (c.reference(d, 0) + c.reference(d, 1)) / 2;
    EXPECT_NEAR(scalar((*c.loss)(y32, p32)), mean, 1e-5 * (1 + std::fabs(mean))) << c.name;
  }
}

TEST(LossesTest, HingeConvertsZeroOneLabelsToPlusMinusOne) {
  // Labels all in {0, 1}: 0 acts as -1. Row: max(1 + 0.3, 0) = 1.3 and max(1 - 0.4, 0) = 0.6.
  EXPECT_NEAR(scalar(Hinge()(f32({1, 2}, {0, 1}), f32({1, 2}, {0.3f, 0.4f}))), 0.95, 1e-6);
  EXPECT_NEAR(scalar(Hinge()(f32({1, 2}, {-1, 1}), f32({1, 2}, {0.3f, 0.4f}))), 0.95, 1e-6);
}

TEST(LossesTest, TheCatalogueHasFiniteDifferenceGradients) {
  const Rows d = sample_rows();
  for (const CatalogueCase& c : catalogue()) {
    // With respect to the prediction (labels are data), away from the piecewise losses' kinks
    // (|e| = delta, hinge margin 1, clip edges) and from zero labels (MAPE divides by 1e-7 there,
    // beyond what f64 differences resolve).
    Tensor y = f64({d.rows, d.cols}, {0.1, 1.0, 0.05, 0.2, 0.5, 0.3});
    HostTensor p = HostTensor::from_vector<double>({d.rows, d.cols}, {0.13, 0.71, 2.45, 0.62, 0.27, 3.9});
    LossHandle loss = c.loss;
    auto f = [&](const std::vector<Tensor>& xs) { return (*loss)(y, xs[0]); };
    EXPECT_TRUE(kiln::testing::check_gradients(f, {p}, {.eps = 1e-6, .rtol = 1e-5, .atol = 1e-7})) << c.name;
  }
}

TEST(LossesTest, LabelSmoothingMovesLabelsTowardUniform) {
  // Categorical, 3 classes, s = 0.3: [0, 1, 0] -> [0.1, 0.8, 0.1].
  Tensor p = f32({1, 3}, {0.2f, 0.5f, 0.3f});
  const double expected = -(0.1 * std::log(0.2) + 0.8 * std::log(0.5) + 0.1 * std::log(0.3));
  EXPECT_NEAR(scalar(CategoricalCrossentropy({.label_smoothing = 0.3})(f32({1, 3}, {0, 1, 0}), p)), expected, 1e-6);
  // Binary, s = 0.2: 1 -> 0.9, 0 -> 0.1.
  const double b = -(0.9 * std::log(0.8) + 0.1 * std::log(0.2) + 0.1 * std::log(0.7) + 0.9 * std::log(0.3)) / 2;
  EXPECT_NEAR(scalar(BinaryCrossentropy({.label_smoothing = 0.2})(f32({1, 2}, {1, 0}), f32({1, 2}, {0.8f, 0.7f}))),
              b, 1e-6);
  EXPECT_THROW(SparseCategoricalCrossentropy({.label_smoothing = 0.1}), ConfigError);
  EXPECT_THROW(CategoricalCrossentropy({.label_smoothing = 1.5}), ConfigError);
}

TEST(LossesTest, NamesAliasesAndConfigsRoundTrip) {
  for (const char* alias : {"mae", "MAE", "mean_absolute_error"})
    EXPECT_EQ(LossHandle(alias)->class_name(), "MeanAbsoluteError") << alias;
  EXPECT_EQ(LossHandle("kld")->class_name(), "KLDivergence");
  EXPECT_EQ(LossHandle("logcosh")->class_name(), "LogCosh");
  EXPECT_EQ(LossHandle("huber_loss")->name(), "huber_loss");
  // Every catalogue loss rebuilds from its own class name and config, options included.
  std::vector<LossHandle> losses = {Huber({.delta = 0.3, .reduction = "sum", .name = "h"}),
                                    CosineSimilarity({.axis = 0}),
                                    CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1}),
                                    BinaryCrossentropy({.label_smoothing = 0.2})};
  for (CatalogueCase& c : catalogue()) losses.push_back(c.loss);
  for (const LossHandle& loss : losses) {
    LossHandle back = loss_from_config(loss->class_name(), loss->get_config());
    EXPECT_EQ(back->class_name(), loss->class_name());
    EXPECT_EQ(back->get_config(), loss->get_config()) << loss->class_name();
  }
  KILN_EXPECT_ERROR(loss_from_config("Hubber", "{}"), ConfigError, "unknown loss class 'Hubber'");
  KILN_EXPECT_ERROR(loss_from_config("Huber", R"({"delta": "big"})"), ConfigError, "wrong type");
  KILN_EXPECT_ERROR(LossHandle("huberr"), ConfigError, "unknown loss 'huberr'");
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

TEST(MetricsTest, WeightedAccuracyCountsOnlyTheWeightedValues) {
  // A (2, 2) sequence of predictions; argmax 2, 0 | 1, 0 against labels 2, 1 | 1, 1; the
  // mask drops step (0, 1): 2 right of 3 kept.
  Accuracy acc;
  Tensor y = i32({2, 2}, {2, 1, 1, 1});
  Tensor p = f32({2, 2, 3}, {0, 1, 5, 9, 0, 0, 0, 3, 1, 4, 0, 0});
  acc.update_state_weighted(y, p, cast(i32({2, 2}, {1, 0, 1, 1}), DType::kBool));
  EXPECT_NEAR(scalar(acc.result()), 2.0 / 3.0, 1e-7);
  Mean m;  // per-value weights: (1 * 1 + 3 * 2) / 3
  m.update(f32({2}, {1, 3}), f32({2}, {1, 2}));
  EXPECT_NEAR(scalar(m.result()), 7.0 / 3.0, 1e-6);
  // A Metric subclass that does not override update_state_weighted says so.
  struct Count : Metric {
    Count() : Metric("count") {}
    void update_state(const Tensor&, const Tensor&) override {}
    Tensor result() const override { return Tensor::scalar(0, DType::kF32); }
  } count;
  KILN_EXPECT_ERROR(count.update_state_weighted(y, p, y), ValueError, "[count] this metric does not take sample weights");
}

TEST(MetricsTest, MeanIsTheRunningMeanOfEveryValue) {
  Mean m;
  m.update(f32({2}, {1, 2}));
  m.update(f32({1}, {6}));
  EXPECT_NEAR(scalar(m.result()), 3.0, 1e-7);
}

}  // namespace
}  // namespace kiln::keras
