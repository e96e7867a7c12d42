// LossScaleOptimizer: inside compiled train steps, the scaled loss is unscaled before the inner
// optimizer sees it, a step with an inf gradient is skipped (weights, slots and iterations
// unchanged) and halves the scale, and the scale doubles after dynamic_growth_steps finite
// steps; compile wraps the optimizer under mixed_float16.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "kiln/keras/keras.h"
#include "kiln/trace/gradient_tape.h"
#include "kiln/trace/ops/elementwise.h"
#include "kiln/trace/ops/reduce.h"
#include "kiln/trace/function.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

double value(const Variable& v) { return v.storage().to_vector<double>()[0]; }

// One SGD step on w (a scalar weight) for loss = w * g_in: the gradient is g_in (times the scale).
struct ScalarProblem {
  Variable w{"w", HostTensor::scalar<float>(1.0f)};
  LossScaleOptimizer opt;
  Function step;
  explicit ScalarProblem(LossScaleOptimizerOptions options)
      : opt(SGD({.learning_rate = 0.5}), options),
        step("step", [this](const std::vector<Tensor>& in) -> std::vector<Tensor> {
          GradientTape tape;
          Tensor loss = reduce_sum(w.read() * in[0]);
          std::vector<Tensor> grads = tape.gradient(opt.scale_loss(loss), {w});
          opt.apply_gradients(grads, {w});
          return {loss};
        }) {}
  void run(float g) { step({HostTensor::from_vector<float>({1}, {g})}); }
};

TEST(LossScaleOptimizerTest, UnscalesTheGradientBeforeTheInnerOptimizer) {
  ScalarProblem p({.initial_scale = 1024});
  p.run(0.25f);
  EXPECT_FLOAT_EQ(value(p.w), 1.0f - 0.5f * 0.25f);  // the unscaled gradient 0.25
  EXPECT_EQ(value(p.opt.iterations()), 1);
  EXPECT_EQ(value(p.opt.step_counter()), 1);
  EXPECT_EQ(value(p.opt.dynamic_scale()), 1024);
}

TEST(LossScaleOptimizerTest, NonFiniteGradientSkipsTheStepAndHalvesTheScale) {
  ScalarProblem p({.initial_scale = 1024});
  p.run(0.25f);
  const double w = value(p.w);
  p.run(std::numeric_limits<float>::infinity());
  EXPECT_EQ(value(p.w), w) << "the weight must not move on a skipped step";
  EXPECT_EQ(value(p.opt.iterations()), 1) << "a skipped step is not counted";
  EXPECT_EQ(value(p.opt.dynamic_scale()), 512);
  EXPECT_EQ(value(p.opt.step_counter()), 0);
  p.run(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(value(p.w), w);
  EXPECT_EQ(value(p.opt.dynamic_scale()), 256);
  // A finite loss whose scaled gradient overflows f32: 1e36 * 1e5 = inf.
  ScalarProblem big({.initial_scale = 1e5});
  big.run(1e36f);
  EXPECT_EQ(value(big.w), 1.0);
  EXPECT_EQ(value(big.opt.dynamic_scale()), 5e4);
}

TEST(LossScaleOptimizerTest, ScaleDoublesAfterGrowthStepsFiniteSteps) {
  ScalarProblem p({.initial_scale = 8, .dynamic_growth_steps = 3});
  p.run(0.1f);
  p.run(0.1f);
  EXPECT_EQ(value(p.opt.dynamic_scale()), 8);
  EXPECT_EQ(value(p.opt.step_counter()), 2);
  p.run(0.1f);
  EXPECT_EQ(value(p.opt.dynamic_scale()), 16);
  EXPECT_EQ(value(p.opt.step_counter()), 0);
  p.run(std::numeric_limits<float>::infinity());  // back to 8, the count restarts
  p.run(0.1f);
  p.run(0.1f);
  EXPECT_EQ(value(p.opt.dynamic_scale()), 8);
  p.run(0.1f);
  EXPECT_EQ(value(p.opt.dynamic_scale()), 16);
  EXPECT_NEAR(value(p.w), 1.0 - 6 * 0.5 * 0.1, 1e-6);
  EXPECT_EQ(value(p.opt.iterations()), 6);
}

TEST(LossScaleOptimizerTest, ValidatesItsOptions) {
  KILN_EXPECT_ERROR(LossScaleOptimizer(SGD(), {.initial_scale = 0}), ValueError, "initial_scale");
  KILN_EXPECT_ERROR(LossScaleOptimizer(SGD(), {.dynamic_growth_steps = 0}), ValueError, "dynamic_growth_steps");
  const OptimizerHandle wrapped = LossScaleOptimizer(SGD());
  KILN_EXPECT_ERROR(LossScaleOptimizer{wrapped}, ValueError, "already a LossScaleOptimizer");
}

TEST(LossScaleOptimizerTest, ConfigRoundTripsAndReadsKerasForms) {
  LossScaleOptimizer lso(optimizers::Adam({.learning_rate = 0.002}), {.initial_scale = 64, .dynamic_growth_steps = 10});
  OptimizerHandle back = optimizer_from_config(lso.class_name(), lso.get_config());
  auto* read = dynamic_cast<LossScaleOptimizer*>(back.get());
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->get_config(), lso.get_config());
  // tf.keras 2.x's form (inner optimizer as {"class_name", "config"}) and Keras 3's
  // (with module / registered_name and the wrapper's name).
  const char* keras2 = R"({"inner_optimizer": {"class_name": "SGD", "config": {"name": "SGD", "learning_rate": 0.5}},
      "dynamic": true, "initial_scale": 1024.0, "dynamic_growth_steps": 100})";
  const char* keras3 = R"({"name": "loss_scale_optimizer", "inner_optimizer": {"module": "keras.optimizers",
      "class_name": "SGD", "config": {"name": "SGD", "learning_rate": 0.5}, "registered_name": null},
      "initial_scale": 1024.0, "dynamic_growth_steps": 100})";
  for (const char* config : {keras2, keras3}) {
    OptimizerHandle h = optimizer_from_config("LossScaleOptimizer", config);
    auto* l = dynamic_cast<LossScaleOptimizer*>(h.get());
    ASSERT_NE(l, nullptr) << config;
    EXPECT_EQ(l->inner_optimizer().class_name(), "SGD");
    EXPECT_DOUBLE_EQ(l->learning_rate(), 0.5);
    EXPECT_EQ(value(l->dynamic_scale()), 1024);
    EXPECT_EQ(l->options().dynamic_growth_steps, 100);
  }
  KILN_EXPECT_ERROR(optimizer_from_config("LossScaleOptimizer", R"({"dynamic": true})"), ConfigError, "inner_optimizer");
}

TEST(LossScaleOptimizerTest, CompileWrapsTheOptimizerUnderMixedFloat16) {
  mixed_precision::set_global_policy("mixed_float16");
  models::Sequential model({layers::Dense(4, {.activation = "relu", .input_shape = {3}}), layers::Dense(2)});
  mixed_precision::set_global_policy("float32");
  model.compile({.optimizer = optimizers::Adam(), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  auto* lso = dynamic_cast<LossScaleOptimizer*>(model.optimizer());
  ASSERT_NE(lso, nullptr);
  EXPECT_EQ(lso->inner_optimizer().class_name(), "Adam");
  const HostTensor x = HostTensor::from_vector<float>({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 0, 1});
  const HostTensor y = HostTensor::from_vector<int32_t>({4}, {0, 1, 1, 0});
  model.fit(x, y, {.batch_size = 4, .epochs = 3, .shuffle = false, .verbose = 0});
  // f16 activations times the initial scale 2^15 can overflow: each of the 3 steps either
  // applied (counted in iterations) or was skipped and halved the scale.
  const double skipped = std::log2(32768.0 / value(lso->dynamic_scale()));
  EXPECT_EQ(value(lso->iterations()) + skipped, 3) << "scale " << value(lso->dynamic_scale());
  EXPECT_GE(value(lso->iterations()), 1);
  EXPECT_EQ(model.layers()[0]->weights()[0].dtype(), DType::kF32);
  models::Sequential plain({layers::Dense(2, {.input_shape = {3}})});
  plain.compile({.optimizer = optimizers::Adam(), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  EXPECT_EQ(dynamic_cast<LossScaleOptimizer*>(plain.optimizer()), nullptr);
}

TEST(LossScaleOptimizerTest, SavedModelsKeepTheWrapperAndItsScale) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kiln_lso_test";
  std::filesystem::create_directories(dir);
  for (const char* file : {"m.h5", "m.keras", "m_dir"}) {
    models::Sequential model({layers::Dense(2, {.input_shape = {3}, .dtype = "mixed_float16"})});
    model.compile({.optimizer = LossScaleOptimizer(optimizers::Adam(), {.initial_scale = 256}),
                   .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    model.fit(HostTensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}), HostTensor::from_vector<int32_t>({2}, {0, 1}),
              {.batch_size = 2, .epochs = 1, .verbose = 0});
    const std::string path = (dir / file).string();
    model.save(path);
    std::unique_ptr<Model> loaded = load_model(path);
    auto* lso = dynamic_cast<LossScaleOptimizer*>(loaded->optimizer());
    ASSERT_NE(lso, nullptr) << file;
    EXPECT_EQ(lso->inner_optimizer().class_name(), "Adam") << file;
    EXPECT_EQ(value(lso->dynamic_scale()), 256) << file;
    // Adam's slots come back too: the loaded model's next step matches the original's.
    const std::vector<Variable> want = model.optimizer()->variables(), got = lso->variables();
    ASSERT_EQ(got.size(), want.size()) << file;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i].storage().to_vector<double>(), want[i].storage().to_vector<double>()) << file << " " << want[i].name();
    EXPECT_EQ(value(lso->iterations()), 1) << file;
    EXPECT_EQ(value(lso->step_counter()), 1) << file;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::keras
