// optimizer_from_config against the configs Keras writes: its defaults, each optimizer's own
// config round trip, the class-name spellings of Keras 2.x and 3, Keras 2.0-2.10's legacy
// keys, and the errors for what Kiln does not implement.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kiln/keras/saving/training_config.h"
#include "tests/keras/keras_testing.h"
#include "tests/testing/expect_error.h"

namespace kiln::keras {
namespace {

// Expects `config` to hold every `"key":value` text of `fields` (nlohmann's dump spelling).
void expect_fields(const std::string& config, const std::vector<std::string>& fields) {
  for (const std::string& f : fields) EXPECT_NE(config.find(f), std::string::npos) << f << " in " << config;
}

TEST(OptimizerFromConfigTest, EmptyConfigGivesKerasDefaults) {
  // keras/optimizers/<name>.py __init__ defaults (2.11-2.15 and 3.x agree).
  struct Case {
    const char* class_name;
    double learning_rate;
    std::vector<std::string> fields;
  };
  const std::vector<Case> cases = {
      {"Adadelta", 0.001, {R"("rho":0.95)", R"("epsilon":1e-07)", R"("decay":0.0)"}},
      {"Adagrad", 0.001, {R"("initial_accumulator_value":0.1)", R"("epsilon":1e-07)"}},
      {"Adamax", 0.001, {R"("beta_1":0.9)", R"("beta_2":0.999)", R"("epsilon":1e-07)"}},
      {"Nadam", 0.001, {R"("beta_1":0.9)", R"("beta_2":0.999)", R"("epsilon":1e-07)", R"("is_legacy_optimizer":false)"}},
      {"Ftrl", 0.001,
       {R"("learning_rate_power":-0.5)", R"("initial_accumulator_value":0.1)", R"("l1_regularization_strength":0.0)",
        R"("l2_regularization_strength":0.0)", R"("l2_shrinkage_regularization_strength":0.0)", R"("beta":0.0)"}},
      {"Lion", 0.0001, {R"("beta_1":0.9)", R"("beta_2":0.99)", R"("is_legacy_optimizer":false)"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.class_name);
    OptimizerHandle opt = optimizer_from_config(c.class_name, "{}");
    EXPECT_EQ(opt->class_name(), c.class_name);
    EXPECT_EQ(opt->name(), c.class_name);
    EXPECT_NEAR(opt->learning_rate(), c.learning_rate, c.learning_rate * 1e-6);
    expect_fields(opt->get_config(), c.fields);
  }
  // tf.keras's new optimizers reject "decay" (Nadam, Lion and AdamW are written in that form).
  for (const char* cls : {"Nadam", "Lion", "AdamW"})
    EXPECT_EQ(optimizer_from_config(cls, "{}")->get_config().find(R"("decay")"), std::string::npos) << cls;
}

TEST(OptimizerFromConfigTest, EveryOptimizerRoundTripsItsConfig) {
  const std::vector<OptimizerHandle> optimizers = {
      Adadelta({.learning_rate = 0.5, .rho = 0.8, .epsilon = 1e-3, .name = "ada"}),
      Adagrad({.learning_rate = 0.02, .initial_accumulator_value = 0.3, .epsilon = 1e-4}),
      Adam({.learning_rate = 0.01, .beta_1 = 0.8}),
      AdamW({.learning_rate = 0.01, .weight_decay = 0.1}),
      Adamax({.learning_rate = 0.003, .beta_1 = 0.7, .beta_2 = 0.9, .epsilon = 1e-5}),
      Nadam({.learning_rate = 0.004, .beta_1 = 0.85, .beta_2 = 0.95, .epsilon = 1e-6}),
      Nadam({.learning_rate = 0.002, .epsilon = 1e-8, .schedule_decay = 0.004}),
      Ftrl({.learning_rate = 0.05, .learning_rate_power = -0.25, .initial_accumulator_value = 0.2,
            .l1_regularization_strength = 0.01, .l2_regularization_strength = 0.02,
            .l2_shrinkage_regularization_strength = 0.03, .beta = 0.4}),
      Lion({.learning_rate = 3e-4, .beta_1 = 0.95, .beta_2 = 0.98}),
      RMSprop({.learning_rate = 0.01, .momentum = 0.5, .centered = true}),
      SGD({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true}),
  };
  for (const OptimizerHandle& opt : optimizers) {
    SCOPED_TRACE(opt->class_name());
    OptimizerHandle back = optimizer_from_config(opt->class_name(), opt->get_config());
    EXPECT_EQ(back->class_name(), opt->class_name());
    EXPECT_EQ(back->get_config(), opt->get_config());
  }
}

TEST(OptimizerFromConfigTest, AcceptsTheClassNamesKerasWrites) {
  // tf.keras 2.11+ registers its optimizers as "Custom>Name"; tf.keras's deserialize accepts
  // any case and 2.9-2.10's "experimental" names.
  const std::vector<std::pair<std::string, std::string>> names = {
      {"Custom>Adadelta", "Adadelta"}, {"Custom>RMSprop", "RMSprop"}, {"Custom>Adam", "Adam"},
      {"Custom>AdamW", "AdamW"},       {"Custom>Lion", "Lion"},       {"Custom>Ftrl", "Ftrl"},
      {"Custom>Nadam", "Nadam"},       {"Custom>Adamax", "Adamax"},   {"Custom>Adagrad", "Adagrad"},
      {"Custom>SGD", "SGD"},           {"adamax", "Adamax"},          {"NADAM", "Nadam"},
      {"ExperimentalAdagrad", "Adagrad"},
  };
  for (const auto& [written, cls] : names) EXPECT_EQ(optimizer_from_config(written, "{}")->class_name(), cls) << written;
}

TEST(OptimizerFromConfigTest, CompileTakesEveryKerasOptimizerString) {
  for (const char* name : {"adadelta", "adagrad", "adam", "adamw", "adamax", "ftrl", "lion", "nadam", "rmsprop", "sgd"}) {
    Sequential model({InputLayer({.shape = {2}}), Dense(1)});
    model.compile({.optimizer = name, .loss = "mse"});
    std::string lower = model.optimizer()->class_name();
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_EQ(lower, name);
  }
}

TEST(OptimizerFromConfigTest, ReadsKeras2LegacyKeys) {
  // Keras 2.0-2.2 wrote "lr", "decay" and "epsilon": null (the backend's 1e-7).
  OptimizerHandle adadelta = optimizer_from_config("Adadelta", R"({"lr": 1.0, "rho": 0.9, "decay": 0.0, "epsilon": null})");
  EXPECT_EQ(adadelta->learning_rate(), 1.0);
  expect_fields(adadelta->get_config(), {R"("rho":0.9)", R"("epsilon":1e-07)"});
  OptimizerHandle adam = optimizer_from_config(
      "Adam", R"({"lr": 0.25, "beta_1": 0.8, "beta_2": 0.99, "decay": 0.0, "epsilon": null, "amsgrad": false})");
  EXPECT_EQ(adam->learning_rate(), 0.25);
  expect_fields(adam->get_config(), {R"("beta_1":0.8)", R"("epsilon":1e-07)"});
  // Keras 2.x's Adagrad has no initial_accumulator_value: tf.keras's from_config gives 0.1.
  expect_fields(optimizer_from_config("Adagrad", R"({"lr": 0.01, "decay": 0.0, "epsilon": 1e-07})")->get_config(),
                {R"("initial_accumulator_value":0.1)"});
  // tf.keras 2.11+'s new-optimizer extras with their off values are ignored.
  OptimizerHandle lion = optimizer_from_config(
      "Custom>Lion", R"({"name": "Lion", "weight_decay": null, "clipnorm": null, "global_clipnorm": null,
                         "clipvalue": null, "use_ema": false, "ema_momentum": 0.99, "ema_overwrite_frequency": null,
                         "jit_compile": true, "is_legacy_optimizer": false, "learning_rate": 0.0003,
                         "beta_1": 0.9, "beta_2": 0.99})");
  EXPECT_NEAR(lion->learning_rate(), 3e-4, 1e-10);
}

TEST(OptimizerFromConfigTest, TrainingConfigRebuildsTheNewOptimizers) {
  const CompileOptions options = compile_options_from_training_config(
      R"({"loss": "mse", "metrics": [], "optimizer_config": {"class_name": "Custom>Ftrl",
          "config": {"name": "Ftrl", "learning_rate": 0.05, "l1_regularization_strength": 0.01,
                     "is_legacy_optimizer": false}}})");
  EXPECT_EQ(options.optimizer->class_name(), "Ftrl");
  EXPECT_NEAR(options.optimizer->learning_rate(), 0.05, 1e-9);
  expect_fields(options.optimizer->get_config(), {R"("l1_regularization_strength":0.01)"});
  // A Kiln-written training_config comes back as the same optimizer.
  const std::string saved = training_config_json({.optimizer = Nadam({.learning_rate = 0.01}), .loss = "mse"});
  EXPECT_EQ(compile_options_from_training_config(saved).optimizer->get_config(),
            Nadam({.learning_rate = 0.01}).get_config());
}

TEST(OptimizerFromConfigTest, UnknownClassNamesItAndTheKnownOnes) {
  KILN_EXPECT_ERROR(optimizer_from_config("Adafactor", "{}"), ConfigError, "unknown optimizer 'Adafactor'");
  KILN_EXPECT_ERROR(optimizer_from_config("Adafactor", "{}"), ConfigError,
                    "Adadelta, Adagrad, Adam, AdamW, Adamax, Ftrl, Lion, Nadam, RMSprop, SGD");
  KILN_EXPECT_ERROR(OptimizerHandle("adafactor"), ConfigError, "unknown optimizer 'adafactor'");
  // Only the "Custom>" package is Keras's own; another package's Adam is another class.
  KILN_EXPECT_ERROR(optimizer_from_config("MyPackage>Adam", "{}"), ConfigError, "unknown optimizer 'MyPackage>Adam'");
}

// Keras 2's decay: lr / (1 + decay * iterations), iterations counting the updates before this
// one (keras/optimizers.py 2.0-2.3; optimizer_v2's _decayed_lr).
TEST(OptimizerFromConfigTest, Keras2DecayIsAnInverseTimeDecay) {
  OptimizerHandle adam = optimizer_from_config("Adam", R"({"lr": 0.1, "decay": 0.01, "epsilon": null})");
  const nlohmann::json config = nlohmann::json::parse(adam->get_config());
  ASSERT_TRUE(config["learning_rate"].is_object()) << config.dump();
  EXPECT_EQ(config["learning_rate"]["class_name"], "InverseTimeDecay");
  LearningRate lr = learning_rate_from_config(config["learning_rate"].dump());
  ASSERT_NE(lr.schedule, nullptr);
  for (int64_t t : {0, 1, 7, 1000})
    EXPECT_NEAR(lr.schedule->at(t), 0.1 / (1.0 + 0.01 * static_cast<double>(t)), 1e-8) << t;
  EXPECT_NEAR(InverseTimeDecay(1.0, 10, 0.5, /*staircase=*/true).at(19), 1.0 / 1.5, 1e-7);
  KILN_EXPECT_ERROR(optimizer_from_config("Adagrad", R"({"learning_rate": {"class_name": "ExponentialDecay",
      "config": {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5}}, "decay": 1e-4})"),
                    ConfigError, "Adagrad with decay=0.0001");
}

// Which Nadam a config names: Keras 2.0-2.3's (schedule_decay), tf.keras optimizer_v2's
// (decay is the schedule decay, not Keras 2's learning-rate decay), 2.11-2.15's
// keras.optimizers.legacy.Nadam (is_legacy_optimizer: true), or Keras 2.11+/3's (neither).
TEST(OptimizerFromConfigTest, LegacyNadamConfigsGiveTheLegacyMomentumSchedule) {
  auto schedule_decay = [](const std::string& config) {
    OptimizerHandle opt = optimizer_from_config("Nadam", config);
    return dynamic_cast<const Nadam&>(*opt).schedule_decay();
  };
  // keras/optimizers.py 2.2.4 (lr, epsilon null) and 2.3.1 (learning_rate).
  EXPECT_EQ(schedule_decay(R"({"lr": 0.002, "beta_1": 0.9, "beta_2": 0.999, "epsilon": null,
                               "schedule_decay": 0.004})"), 0.004);
  EXPECT_EQ(schedule_decay(R"({"learning_rate": 0.002, "schedule_decay": 0.01})"), 0.01);
  // optimizer_v2 (tf.keras 2.0-2.10; legacy in 2.11-2.15).
  EXPECT_EQ(schedule_decay(R"({"name": "Nadam", "learning_rate": 0.001, "decay": 0.004, "beta_1": 0.9})"), 0.004);
  EXPECT_EQ(schedule_decay(R"({"name": "Nadam", "learning_rate": 0.001, "decay": 0.0})"), 0.0);
  EXPECT_EQ(schedule_decay(R"({"name": "Nadam", "is_legacy_optimizer": true})"), kNadamLegacyScheduleDecay);
  EXPECT_EQ(schedule_decay(R"({"name": "Nadam", "is_legacy_optimizer": false})"), std::nullopt);
  EXPECT_EQ(schedule_decay("{}"), std::nullopt);
  // Its decay is not a learning-rate decay: the learning rate stays a constant.
  OptimizerHandle v2 = optimizer_from_config("Nadam", R"({"learning_rate": 0.002, "decay": 0.004})");
  EXPECT_NEAR(v2->learning_rate(), 0.002, 1e-9);
  // It is written back in optimizer_v2's form (no is_legacy_optimizer: tf.keras 2.11+ then
  // loads an .h5 file's legacy class), and reads back as the same optimizer.
  const std::string config = v2->get_config();
  expect_fields(config, {R"("decay":0.004)", R"("beta_1":0.9)", R"("epsilon":1e-07)"});
  EXPECT_EQ(config.find("is_legacy_optimizer"), std::string::npos) << config;
  EXPECT_EQ(optimizer_from_config("Nadam", config)->get_config(), config);
  // As in optimizer_v2, the legacy Nadam takes no learning-rate schedule.
  KILN_EXPECT_ERROR(Nadam({.learning_rate = ExponentialDecay(0.1, 10, 0.5), .schedule_decay = 0.004}), ValueError,
                    "legacy Nadam (schedule_decay=0.004) does not support a LearningRateSchedule");
}

TEST(OptimizerFromConfigTest, SettingsKilnLacksAreConfigErrorsNamingTheKey) {
  KILN_EXPECT_ERROR(optimizer_from_config("Nadam", R"({"schedule_decay": 0.004, "decay": 0.01})"), ConfigError,
                    "Nadam with decay=0.01: a Nadam config with both schedule_decay and decay");
  KILN_EXPECT_ERROR(optimizer_from_config("Adam", R"({"amsgrad": true})"), ConfigError, "Adam with amsgrad=true");
  KILN_EXPECT_ERROR(optimizer_from_config("Lion", R"({"use_ema": true})"), ConfigError, "Lion with use_ema=true");
  KILN_EXPECT_ERROR(optimizer_from_config("Adam", R"({"weight_decay": 0.01})"), ConfigError, "use AdamW");
  KILN_EXPECT_ERROR(optimizer_from_config("Ftrl", R"({"beta": "x"})"), ConfigError,
                    "Ftrl config: expected beta to be a number, received beta=\"x\"");
  // A key no Keras release writes for the class (Ftrl has no epsilon) is an error, as Keras's
  // from_config raises on it, never ignored.
  KILN_EXPECT_ERROR(optimizer_from_config("Ftrl", R"({"epsilon": 1e-7})"), ConfigError,
                    "Ftrl config has an unexpected key 'epsilon'");
  KILN_EXPECT_ERROR(optimizer_from_config("Adam", R"({"learning_rat": 0.1})"), ConfigError,
                    "Adam config has an unexpected key 'learning_rat'");
  KILN_EXPECT_ERROR(optimizer_from_config("Ftrl", R"({"l1_regularization_strength": -1})"), ValueError,
                    "l1_regularization_strength=-1");
  KILN_EXPECT_ERROR(optimizer_from_config("SGD", "[1]"), ConfigError, "expected the SGD config as a JSON object");
}

}  // namespace
}  // namespace kiln::keras
