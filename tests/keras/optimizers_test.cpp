// Optimizers and schedules against updates computed by hand: applied eagerly on scalars, and
// (for the optimizers after Adam, SGD and RMSprop) trained through Model::fit's compiled step
// against the Keras formulas written out in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

using testing::scalar;

Variable weight(float value) { return Variable("w", HostTensor::scalar<float>(value)); }

// Applies `steps` steps of gradient `g` to a scalar weight starting at `w0`; returns w.
double run(Optimizer& opt, float w0, float g, int steps) {
  Variable w = weight(w0);
  for (int i = 0; i < steps; ++i) opt.apply_gradients({Tensor::scalar(g)}, {w});
  return scalar(w);
}

TEST(AdamTest, OneStepMatchesTheKerasFormula) {
  // lr_t = 0.1 sqrt(1 - 0.999) / (1 - 0.9) = 0.0316228; m = 0.05; v = 0.00025;
  // w = 1 - lr_t m / (sqrt(v) + 1e-7) = 1 - 0.1 * 0.0158114 / 0.0158115 = 0.90000063.
  Adam adam({.learning_rate = 0.1});
  EXPECT_NEAR(run(adam, 1.0f, 0.5f, 1), 0.90000063, 1e-6);
  EXPECT_EQ(adam.iterations().storage().to_vector<int64_t>()[0], 1);
}

TEST(AdamTest, DefaultsAreKeras) {
  Adam adam;
  EXPECT_NEAR(adam.learning_rate(), 1e-3, 1e-9);
}

TEST(AdamWTest, DecaysTheWeightBeforeTheAdamStep) {
  // w = 1 - 0.1 * 0.1 * 1 = 0.99, then the Adam step of AdamTest: 0.99 - 0.09999937.
  AdamW adamw({.learning_rate = 0.1, .weight_decay = 0.1});
  EXPECT_NEAR(run(adamw, 1.0f, 0.5f, 1), 0.89000063, 1e-6);
}

TEST(SGDTest, PlainStepIsLearningRateTimesGradient) {
  SGD sgd({.learning_rate = 0.1});
  EXPECT_NEAR(run(sgd, 1.0f, 1.0f, 1), 0.9, 1e-7);
}

TEST(SGDTest, MomentumTwoSteps) {
  // v1 = -0.1, w1 = 0.9; v2 = 0.9 * -0.1 - 0.1 = -0.19, w2 = 0.71.
  SGD sgd({.learning_rate = 0.1, .momentum = 0.9});
  EXPECT_NEAR(run(sgd, 1.0f, 1.0f, 2), 0.71, 1e-6);
}

TEST(SGDTest, NesterovTwoSteps) {
  // w1 = 1 + 0.9 * -0.1 - 0.1 = 0.81; w2 = 0.81 + 0.9 * -0.19 - 0.1 = 0.539.
  SGD sgd({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true});
  EXPECT_NEAR(run(sgd, 1.0f, 1.0f, 2), 0.539, 1e-6);
}

TEST(RMSpropTest, TwoSteps) {
  // ms1 = 0.1 * 4 = 0.4, w1 = 1 - 0.01 * 2 / sqrt(0.4) = 0.96837722;
  // ms2 = 0.9 * 0.4 + 0.4 = 0.76, w2 = w1 - 0.02 / sqrt(0.76) = 0.94543563.
  RMSprop rms({.learning_rate = 0.01});
  EXPECT_NEAR(run(rms, 1.0f, 2.0f, 2), 0.94543563, 1e-6);
}

// The model the training tests fit: y = x . w (Dense(1) without bias) on the single row
// x = (1, -2), y = 0.5, with squared error, so the gradient is g = 2 (x . w - y) x.
constexpr double kX[2] = {1.0, -2.0};
constexpr double kY = 0.5;
constexpr double kW0[2] = {0.25, 0.75};

// One hand-written update of `w` for the gradient `g` at step `t` (1, 2, ...); the test keeps
// the optimizer state (accumulators, momentum) it needs beside it.
using ReferenceStep = std::function<void(std::vector<double>& w, const std::vector<double>& g, int t)>;

// Trains with `optimizer` through Model::fit, one step per call, and checks the kernel after
// each step against `reference` (relative 1e-6). The reference must move every weight by
// more than 1e-2, so that an update that does nothing fails.
void expect_fit_matches_reference(OptimizerHandle optimizer, const ReferenceStep& reference, int steps = 3) {
  Sequential model({InputLayer({.shape = {2}}), Dense(1, {.use_bias = false})});
  model.compile({.optimizer = std::move(optimizer), .loss = "mse"});
  model.set_weights({HostTensor::from_vector<float>({2, 1}, {static_cast<float>(kW0[0]), static_cast<float>(kW0[1])})});
  const HostTensor x = HostTensor::from_vector<float>({1, 2}, {static_cast<float>(kX[0]), static_cast<float>(kX[1])});
  const HostTensor y = HostTensor::from_vector<float>({1, 1}, {static_cast<float>(kY)});
  std::vector<double> w(std::begin(kW0), std::end(kW0));
  for (int t = 1; t <= steps; ++t) {
    const double residual = 2.0 * (kX[0] * w[0] + kX[1] * w[1] - kY);
    reference(w, {residual * kX[0], residual * kX[1]}, t);
    model.fit(x, y, {.batch_size = 1, .shuffle = false, .verbose = 0});
    const std::vector<double> got = model.get_weights()[0].to_vector<double>();
    for (size_t i = 0; i < 2; ++i)
      EXPECT_NEAR(got[i], w[i], 1e-6 * std::max(1.0, std::abs(w[i]))) << "step " << t << ", weight " << i;
  }
  for (size_t i = 0; i < 2; ++i) EXPECT_GT(std::abs(w[i] - kW0[i]), 1e-2) << "weight " << i << " hardly moves";
}

TEST(AdadeltaTest, ThreeFitStepsMatchTheKerasFormula) {
  const double lr = 1.0, rho = 0.95, eps = 1e-2;
  std::vector<double> accumulated_grad(2), accumulated_delta_var(2);
  expect_fit_matches_reference(Adadelta({.learning_rate = lr, .rho = rho, .epsilon = eps}),
                               [&](std::vector<double>& w, const std::vector<double>& g, int) {
                                 for (size_t i = 0; i < 2; ++i) {
                                   accumulated_grad[i] = rho * accumulated_grad[i] + (1 - rho) * g[i] * g[i];
                                   const double delta = -std::sqrt(accumulated_delta_var[i] + eps) /
                                                        std::sqrt(accumulated_grad[i] + eps) * g[i];
                                   accumulated_delta_var[i] = rho * accumulated_delta_var[i] + (1 - rho) * delta * delta;
                                   w[i] += lr * delta;
                                 }
                               });
}

TEST(AdagradTest, ThreeFitStepsMatchTheKerasFormula) {
  // epsilon 0.5 tells Keras 2.11+'s sqrt(accumulator + epsilon) from the legacy sqrt(accumulator) + epsilon.
  const double lr = 0.1, eps = 0.5;
  std::vector<double> accumulator(2, 0.1);  // initial_accumulator_value
  expect_fit_matches_reference(Adagrad({.learning_rate = lr, .epsilon = eps}),
                               [&](std::vector<double>& w, const std::vector<double>& g, int) {
                                 for (size_t i = 0; i < 2; ++i) {
                                   accumulator[i] += g[i] * g[i];
                                   w[i] -= lr * g[i] / std::sqrt(accumulator[i] + eps);
                                 }
                               });
}

TEST(AdamaxTest, ThreeFitStepsMatchTheKerasFormula) {
  const double lr = 0.1, beta_1 = 0.9, beta_2 = 0.999, eps = 1e-7;
  std::vector<double> m(2), u(2);
  expect_fit_matches_reference(Adamax({.learning_rate = lr}),
                               [&](std::vector<double>& w, const std::vector<double>& g, int t) {
                                 for (size_t i = 0; i < 2; ++i) {
                                   m[i] = beta_1 * m[i] + (1 - beta_1) * g[i];
                                   u[i] = std::max(beta_2 * u[i], std::abs(g[i]));
                                   w[i] -= lr * m[i] / ((1 - std::pow(beta_1, t)) * (u[i] + eps));
                                 }
                               });
}

TEST(NadamTest, ThreeFitStepsMatchTheKerasFormula) {
  // Keras casts beta_1, beta_2 and 0.96 to the variable's dtype: with f32 0.999, 1 - 0.999^2
  // differs from the exact value by 1.3e-5 relative, more than the tolerance.
  const double lr = 0.1, eps = 1e-7, beta_1 = 0.9f, beta_2 = 0.999f, decay = 0.96f;
  auto momentum_at = [&](int t) { return beta_1 * (1 - 0.5 * std::pow(decay, t)); };
  double u_product = 1.0;
  std::vector<double> m(2), v(2);
  expect_fit_matches_reference(Nadam({.learning_rate = lr}),
                               [&](std::vector<double>& w, const std::vector<double>& g, int t) {
                                 const double u_t = momentum_at(t), u_t_1 = momentum_at(t + 1);
                                 u_product *= u_t;  // once per step, for every variable
                                 for (size_t i = 0; i < 2; ++i) {
                                   m[i] = beta_1 * m[i] + (1 - beta_1) * g[i];
                                   v[i] = beta_2 * v[i] + (1 - beta_2) * g[i] * g[i];
                                   const double m_hat = u_t_1 * m[i] / (1 - u_product * u_t_1) +
                                                        (1 - u_t) * g[i] / (1 - u_product);
                                   const double v_hat = v[i] / (1 - std::pow(beta_2, t));
                                   w[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
                                 }
                               });
}

// Keras 2.2.4's keras/optimizers.py Nadam.get_updates (and tf.keras optimizer_v2's
// _prepare_local / _resource_apply_dense, the same update):
//   momentum_cache_t = beta_1 (1 - 0.5 * 0.96^(t * schedule_decay)), momentum_cache_t_1 at t + 1;
//   m_schedule_new = m_schedule * momentum_cache_t; m_schedule_next = m_schedule_new * momentum_cache_t_1;
//   g' = g / (1 - m_schedule_new); m = beta_1 m + (1 - beta_1) g; m' = m / (1 - m_schedule_next);
//   v = beta_2 v + (1 - beta_2) g^2; v' = v / (1 - beta_2^t);
//   m_bar = (1 - momentum_cache_t) g' + momentum_cache_t_1 m'; p -= lr m_bar / (sqrt(v') + epsilon).
TEST(NadamTest, LegacyScheduleDecayThreeFitStepsMatchKeras2Formula) {
  const double lr = 0.1, eps = 1e-7, beta_1 = 0.9f, beta_2 = 0.999f, base = 0.96f, schedule_decay = 0.004f;
  auto momentum_cache = [&](int t) { return beta_1 * (1 - 0.5 * std::pow(base, t * schedule_decay)); };
  double m_schedule = 1.0;
  std::vector<double> m(2), v(2);
  expect_fit_matches_reference(Nadam({.learning_rate = lr, .schedule_decay = 0.004}),
                               [&](std::vector<double>& w, const std::vector<double>& g, int t) {
                                 const double cache_t = momentum_cache(t), cache_t_1 = momentum_cache(t + 1);
                                 const double m_schedule_new = m_schedule * cache_t;
                                 const double m_schedule_next = m_schedule_new * cache_t_1;
                                 m_schedule = m_schedule_new;
                                 for (size_t i = 0; i < 2; ++i) {
                                   const double g_prime = g[i] / (1 - m_schedule_new);
                                   m[i] = beta_1 * m[i] + (1 - beta_1) * g[i];
                                   const double m_prime = m[i] / (1 - m_schedule_next);
                                   v[i] = beta_2 * v[i] + (1 - beta_2) * g[i] * g[i];
                                   const double v_prime = v[i] / (1 - std::pow(beta_2, t));
                                   const double m_bar = (1 - cache_t) * g_prime + cache_t_1 * m_prime;
                                   w[i] -= lr * m_bar / (std::sqrt(v_prime) + eps);
                                 }
                               });
}

TEST(NadamTest, LegacyMomentumCacheIsTheProductOfTheLegacySchedule) {
  // Two steps with schedule_decay 0.004: m_schedule = u_1 u_2 with u_t = 0.9 (1 - 0.5 * 0.96^(0.004 t)),
  // where Keras 2.11+/3's Nadam has 0.96^t.
  Nadam nadam({.schedule_decay = 0.004});
  Variable a("a", HostTensor::scalar<float>(1.0f));
  for (int i = 0; i < 2; ++i) nadam.apply_gradients({Tensor::scalar(0.5)}, {a});
  const std::vector<Variable> vars = nadam.variables();
  ASSERT_EQ(vars.back().name(), "Nadam/u_product");
  auto u = [](int t) { return 0.9 * (1 - 0.5 * std::pow(0.96, 0.004 * t)); };
  EXPECT_NEAR(scalar(vars.back()), u(1) * u(2), 1e-7);
  // The state a file without it implies (Keras 2.0-2.2, tf.keras 2.11-2.15's new Nadam).
  EXPECT_NEAR(nadam.u_product_after(2), u(1) * u(2), 1e-7);
  EXPECT_EQ(nadam.u_product_after(0), 1.0f);
  Nadam fresh;
  auto u_new = [](int t) { return 0.9 * (1 - 0.5 * std::pow(0.96, t)); };
  EXPECT_NEAR(fresh.u_product_after(3), u_new(1) * u_new(2) * u_new(3), 1e-7);
  EXPECT_LT(fresh.u_product_after(int64_t{1} << 40), 1e-40f);  // settles long before: no 2^40 loop
}

TEST(NadamTest, MomentumScheduleProductIsSavedStateUpdatedOncePerStep) {
  // Two variables, two steps: u_product = u_1 u_2, not (u_1 u_2)^2 or u_1^2 u_2^2.
  Nadam nadam;
  Variable a("a", HostTensor::scalar<float>(1.0f)), b("b", HostTensor::scalar<float>(2.0f));
  for (int i = 0; i < 2; ++i) nadam.apply_gradients({Tensor::scalar(0.5), Tensor::scalar(-0.5)}, {a, b});
  const std::vector<Variable> vars = nadam.variables();
  auto u_product = std::find_if(vars.begin(), vars.end(), [](const Variable& v) { return v.name() == "Nadam/u_product"; });
  ASSERT_NE(u_product, vars.end());
  EXPECT_NEAR(scalar(*u_product), 0.9 * (1 - 0.5 * 0.96) * 0.9 * (1 - 0.5 * 0.96 * 0.96), 1e-7);
}

// Keras's Ftrl step (TensorFlow's ApplyFtrlV2) for one weight, with p = -learning_rate_power.
struct FtrlReference {
  double lr, power, l1, l2, shrinkage, beta;
  std::vector<double> accumulator = std::vector<double>(2, 0.1), linear = std::vector<double>(2, 0.0);

  void operator()(std::vector<double>& w, const std::vector<double>& g, int) {
    for (size_t i = 0; i < 2; ++i) {
      const double n = accumulator[i] + g[i] * g[i];
      linear[i] += g[i] + 2 * shrinkage * w[i] - (std::pow(n, power) - std::pow(accumulator[i], power)) / lr * w[i];
      const double quadratic = std::pow(n, power) / lr + 2 * (l2 + beta / (2 * lr));
      w[i] = (std::clamp(linear[i], -l1, l1) - linear[i]) / quadratic;
      accumulator[i] = n;
    }
  }
};

TEST(FtrlTest, ThreeFitStepsMatchTheKerasFormulaWithEveryTermOn) {
  FtrlReference reference{.lr = 0.1, .power = 0.5, .l1 = 0.01, .l2 = 0.1, .shrinkage = 0.05, .beta = 0.5};
  expect_fit_matches_reference(Ftrl({.learning_rate = 0.1, .l1_regularization_strength = 0.01,
                                     .l2_regularization_strength = 0.1, .l2_shrinkage_regularization_strength = 0.05,
                                     .beta = 0.5}),
                               std::ref(reference));
}

TEST(FtrlTest, LearningRatePowerOtherThanAHalf) {
  FtrlReference reference{.lr = 0.2, .power = 0.25, .l1 = 0.0, .l2 = 0.0, .shrinkage = 0.0, .beta = 0.0};
  expect_fit_matches_reference(Ftrl({.learning_rate = 0.2, .learning_rate_power = -0.25}), std::ref(reference));
}

TEST(FtrlTest, StrongL1ClipsTheWeightsToZero) {
  // |linear| < l1 after the first step, so w = (linear - linear) / quadratic = 0 exactly.
  Variable w = weight(0.5f);
  Ftrl ftrl({.learning_rate = 0.1, .l1_regularization_strength = 100.0});
  ftrl.apply_gradients({Tensor::scalar(1.0)}, {w});
  EXPECT_EQ(scalar(w), 0.0);
}

TEST(LionTest, ThreeFitStepsMatchTheKerasFormula) {
  const double lr = 0.1, beta_1 = 0.9, beta_2 = 0.99;
  std::vector<double> m(2);
  expect_fit_matches_reference(Lion({.learning_rate = lr}),
                               [&](std::vector<double>& w, const std::vector<double>& g, int) {
                                 for (size_t i = 0; i < 2; ++i) {
                                   const double c = beta_1 * m[i] + (1 - beta_1) * g[i];
                                   w[i] -= lr * ((c > 0) - (c < 0));
                                   m[i] = beta_2 * m[i] + (1 - beta_2) * g[i];
                                 }
                               });
}

TEST(LionTest, ZeroUpdateDirectionLeavesTheWeight) {
  // sign(0) = 0: a zero gradient with zero momentum moves nothing.
  Lion lion({.learning_rate = 0.5});
  EXPECT_EQ(run(lion, 1.0f, 0.0f, 1), 1.0);
}

TEST(OptimizerTest, ArgumentsOutOfRangeAreValueErrorsNamingThem) {
  KILN_EXPECT_ERROR(Ftrl({.l1_regularization_strength = -1}), ValueError, "l1_regularization_strength=-1");
  KILN_EXPECT_ERROR(Ftrl({.initial_accumulator_value = -0.1}), ValueError, "initial_accumulator_value=-0.1");
  KILN_EXPECT_ERROR(Ftrl({.learning_rate_power = 0.5}), ValueError, "learning_rate_power=0.5");
  KILN_EXPECT_ERROR(Lion({.beta_1 = 0}), ValueError, "beta_1=0");
}

// The names of an optimizer's slots (its variables after iterations and learning_rate) once
// it has stepped the scalar "w".
std::vector<std::string> slot_names(Optimizer& opt) {
  run(opt, 1.0f, 0.5f, 1);
  std::vector<std::string> out;
  for (const Variable& v : opt.variables()) out.push_back(v.name());
  return {out.begin() + 2, out.end()};
}

TEST(OptimizerTest, SlotNamesAreKeras211s) {
  // keras/optimizers/<name>.py (2.11-2.15): add_variable_from_reference(var, "<slot>"), plus
  // Nadam's _u_product.
  using Names = std::vector<std::string>;
  Adadelta adadelta;
  EXPECT_EQ(slot_names(adadelta), (Names{"Adadelta/w/accumulated_grad", "Adadelta/w/accumulated_delta_var"}));
  Adagrad adagrad;
  EXPECT_EQ(slot_names(adagrad), (Names{"Adagrad/w/accumulator"}));
  Adamax adamax;
  EXPECT_EQ(slot_names(adamax), (Names{"Adamax/w/m", "Adamax/w/u"}));
  Nadam nadam;
  EXPECT_EQ(slot_names(nadam), (Names{"Nadam/w/m", "Nadam/w/v", "Nadam/u_product"}));
  Ftrl ftrl;
  EXPECT_EQ(slot_names(ftrl), (Names{"Ftrl/w/accumulator", "Ftrl/w/linear"}));
  Lion lion;
  EXPECT_EQ(slot_names(lion), (Names{"Lion/w/m"}));
}

TEST(OptimizerTest, AccumulatorsStartAtInitialAccumulatorValue) {
  Adagrad adagrad({.initial_accumulator_value = 0.25});
  Ftrl ftrl({.initial_accumulator_value = 0.5});
  Variable w("w", HostTensor::from_vector<float>({3}, {1, 2, 3}));
  adagrad.create_slots({w});
  ftrl.create_slots({w});
  EXPECT_EQ(adagrad.variables()[2].storage().to_vector<float>(), std::vector<float>(3, 0.25f));
  EXPECT_EQ(ftrl.variables()[2].storage().to_vector<float>(), std::vector<float>(3, 0.5f));
  EXPECT_EQ(ftrl.variables()[3].storage().to_vector<float>(), std::vector<float>(3, 0.0f));  // linear
}

TEST(SchedulesTest, ExponentialDecayAtSeveralSteps) {
  ExponentialDecay s(0.1, 10, 0.5);
  EXPECT_NEAR(s.at(0), 0.1, 1e-7);
  EXPECT_NEAR(s.at(5), 0.070710678, 1e-7);  // 0.1 * 0.5^0.5
  EXPECT_NEAR(s.at(20), 0.025, 1e-7);
  EXPECT_NEAR(ExponentialDecay(0.1, 10, 0.5, /*staircase=*/true).at(15), 0.05, 1e-7);
}

TEST(SchedulesTest, PiecewiseConstantDecayIncludesEachBoundaryInTheEarlierPiece) {
  PiecewiseConstantDecay s({10, 20}, {1.0, 0.5, 0.1});
  EXPECT_NEAR(s.at(0), 1.0, 1e-7);
  EXPECT_NEAR(s.at(10), 1.0, 1e-7);
  EXPECT_NEAR(s.at(11), 0.5, 1e-7);
  EXPECT_NEAR(s.at(20), 0.5, 1e-7);
  EXPECT_NEAR(s.at(21), 0.1, 1e-7);
  EXPECT_THROW(PiecewiseConstantDecay({1}, {1.0}), ValueError);
}

TEST(SchedulesTest, CosineDecayAtSeveralSteps) {
  CosineDecay s(1.0, 100);
  EXPECT_NEAR(s.at(0), 1.0, 1e-6);
  EXPECT_NEAR(s.at(25), 0.85355339, 1e-6);  // 0.5 (1 + cos(pi / 4))
  EXPECT_NEAR(s.at(50), 0.5, 1e-6);
  EXPECT_NEAR(s.at(100), 0.0, 1e-6);
  EXPECT_NEAR(s.at(200), 0.0, 1e-6);
  EXPECT_NEAR(CosineDecay(1.0, 100, /*alpha=*/0.1).at(100), 0.1, 1e-6);
}

TEST(SchedulesTest, OptimizerEvaluatesTheScheduleAtIterationsBeforeTheIncrement) {
  // Step 0 uses lr 1.0 (step <= 0), step 1 uses 0.5: w = 0 - 1 - 0.5.
  SGD sgd({.learning_rate = PiecewiseConstantDecay({0}, {1.0, 0.5})});
  EXPECT_NEAR(run(sgd, 0.0f, 1.0f, 2), -1.5, 1e-6);
  EXPECT_THROW(sgd.set_learning_rate(0.1), ValueError);
}

TEST(SchedulesTest, ConfigsRoundTripAsKerasSerializesThem) {
  const LearningRate decay = ExponentialDecay(0.1, 10, 0.5, /*staircase=*/true);
  const std::string json = learning_rate_to_config(decay);
  EXPECT_NE(json.find("\"class_name\":\"ExponentialDecay\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"module\":\"keras.optimizers.schedules\""), std::string::npos) << json;
  const LearningRate back = learning_rate_from_config(json);
  ASSERT_TRUE(back.schedule);
  for (int64_t step : {0, 9, 10, 25}) EXPECT_DOUBLE_EQ(back.schedule->at(step), decay.schedule->at(step)) << step;
  EXPECT_EQ(learning_rate_from_config("0.25").constant, 0.25);
  EXPECT_FALSE(learning_rate_from_config("0.25").schedule);
  KILN_EXPECT_ERROR(learning_rate_from_config(R"({"class_name": "PolynomialDecay", "config": {}})"), ConfigError,
                    "unknown schedule class 'PolynomialDecay'");
  KILN_EXPECT_ERROR(learning_rate_from_config(R"({"class_name": "CosineDecay", "config": {"alpha": 0}})"),
                    ConfigError, "CosineDecay config");
}

TEST(OptimizerTest, SlotsAreCreatedAtTheFirstApply) {
  Adam adam;
  EXPECT_EQ(adam.variables().size(), 2u);  // iterations, learning_rate
  run(adam, 1.0f, 1.0f, 1);
  EXPECT_EQ(adam.variables().size(), 4u);  // + m, v
  EXPECT_EQ(adam.variables()[2].name(), "Adam/w/m");
}

}  // namespace
}  // namespace kiln::keras
