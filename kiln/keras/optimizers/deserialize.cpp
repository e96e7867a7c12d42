// optimizer_from_config: one table row per optimizer class, each reading its options over the
// defaults of its options struct; the legacy keys and the unsupported settings are handled
// once, for every class.
#include "kiln/keras/optimizers/deserialize.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/keras/layers/config_impl.h"
#include "kiln/keras/optimizers/adadelta.h"
#include "kiln/keras/optimizers/adagrad.h"
#include "kiln/keras/optimizers/adam.h"
#include "kiln/keras/optimizers/adamax.h"
#include "kiln/keras/optimizers/ftrl.h"
#include "kiln/keras/optimizers/lion.h"
#include "kiln/keras/optimizers/loss_scale_optimizer.h"
#include "kiln/keras/optimizers/nadam.h"
#include "kiln/keras/optimizers/rmsprop.h"
#include "kiln/keras/optimizers/sgd.h"

namespace kiln::keras {
namespace {

using nlohmann::json;

constexpr const char* kWhere = "optimizer_from_config";

// One optimizer's config, read over the defaults of its options struct.
class ConfigReader {
 public:
  ConfigReader(std::string class_name, json config) : class_name_(std::move(class_name)), config_(std::move(config)) {}

  const std::string& class_name() const { return class_name_; }
  bool has(const char* key) const { return config_.contains(key) && !config_[key].is_null(); }

  /// config[key], or `fallback` when absent or null (Keras 2.0-2.2 wrote "epsilon": null
  /// meaning the backend's epsilon, 1e-7, which is every Kiln default).
  double number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!config_[key].is_number()) fail(key, "a number");
    return config_[key].get<double>();
  }
  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!config_[key].is_boolean()) fail(key, "true or false");
    return config_[key].get<bool>();
  }
  /// "learning_rate" (a number or a serialized schedule), or Keras 2.0-2.10's "lr"; with Keras
  /// 2's "decay" (lr / (1 + decay * iterations)) an InverseTimeDecay over it, unless
  /// `decay_is_lr_decay` is false (legacy Nadam's "decay" is its momentum-schedule decay).
  LearningRate learning_rate(const LearningRate& fallback, bool decay_is_lr_decay = true) const {
    const char* key = has("learning_rate") ? "learning_rate" : "lr";
    LearningRate lr = has(key) ? learning_rate_from_config(config_[key].dump()) : fallback;
    const double decay = decay_is_lr_decay ? number("decay", 0.0) : 0.0;
    if (decay == 0.0) return lr;
    if (lr.schedule)
      unsupported("decay", "Keras 2's decay applies to a constant learning rate, and this one is a schedule",
                  "drop decay or fold it into the schedule");
    return InverseTimeDecay(lr.constant, 1, decay);
  }
  /// config[key], or unset when absent or null.
  std::optional<double> optional_number(const char* key) const {
    if (!has(key)) return std::nullopt;
    return number(key, 0.0);
  }
  std::string name(const std::string& fallback) const {
    if (!has("name")) return fallback;
    if (!config_["name"].is_string()) fail("name", "a string");
    return config_["name"].get<std::string>();
  }

  /// ConfigError naming `key` (with its value) for a setting Kiln does not implement.
  [[noreturn]] void unsupported(const char* key, const std::string& why, const std::string& hint) const {
    KILN_THROW(ConfigError, "[", kWhere, "] ", class_name_, " with ", key, "=", config_[key].dump(), ": ", why,
               ". Hint: ", hint, ".");
  }

 private:
  [[noreturn]] void fail(const char* key, const char* expected) const {
    KILN_THROW(ConfigError, "[", kWhere, "] ", class_name_, " config: expected ", key, " to be ", expected,
               ", received ", key, "=", config_[key].dump(), ".");
  }

  std::string class_name_;
  json config_;
};

constexpr const char* kRecompileHint = "load with compile=false and compile with a Kiln optimizer";

// Settings every Keras version may write that change the update and that Kiln lacks: present
// with a value that is not the off value, they are errors rather than silently dropped.
void reject_unsupported(const ConfigReader& c, bool takes_weight_decay) {
  if (c.flag("amsgrad", false)) c.unsupported("amsgrad", "AMSGrad is not supported", kRecompileHint);
  if (c.flag("use_ema", false))
    c.unsupported("use_ema", "an exponential moving average of the weights is not supported", kRecompileHint);
  if (!takes_weight_decay && c.number("weight_decay", 0.0) != 0.0)
    c.unsupported("weight_decay", "weight decay is supported by AdamW only", "use AdamW");
  for (const char* key : {"gradient_accumulation_steps", "loss_scale_factor"})
    if (c.has(key)) c.unsupported(key, "this setting is not supported", kRecompileHint);
}

// Which Nadam a config is: Keras 2.0-2.3 wrote "schedule_decay"; tf.keras's optimizer_v2
// Nadam (<= 2.10, and keras.optimizers.legacy.Nadam of 2.11-2.15, which also says
// "is_legacy_optimizer": true) keeps it as "decay". Keras 2.11+/3's Nadam writes neither, and
// has the schedule 0.96^t. Unset for that Nadam, else the legacy schedule decay.
std::optional<double> nadam_schedule_decay(const ConfigReader& c) {
  if (c.has("schedule_decay")) {
    if (c.number("decay", 0.0) != 0.0)
      c.unsupported("decay", "a Nadam config with both schedule_decay and decay is not one that Keras wrote",
                    "keep one of them: both are the momentum-schedule decay");
    return c.number("schedule_decay", kNadamLegacyScheduleDecay);
  }
  if (c.has("decay")) return c.number("decay", kNadamLegacyScheduleDecay);
  if (c.flag("is_legacy_optimizer", false)) return kNadamLegacyScheduleDecay;
  return std::nullopt;
}

// `options` with the clipping keys every Keras optimizer config may carry (null when off).
template <class Options>
Options with_clipping(const ConfigReader& c, Options options) {
  options.clipnorm = c.optional_number("clipnorm");
  options.clipvalue = c.optional_number("clipvalue");
  options.global_clipnorm = c.optional_number("global_clipnorm");
  return options;
}

// The keys any optimizer config may hold: Keras 2.0-2.10's lr and decay, optimizer_v2's
// clipping and name, tf.keras 2.11+'s new-optimizer keys (jit_compile picks a compiler, not a
// result; is_legacy_optimizer tells the two families apart) and Keras 3's base keys. Those
// that change the update and that Kiln lacks are checked by value in reject_unsupported.
constexpr internal::ConfigKey kOptimizerBaseKeys[] = {
    {"name"},           {"learning_rate"},     {"lr"},          {"decay"},
    {"clipnorm"},       {"clipvalue"},         {"global_clipnorm"}, {"is_legacy_optimizer"},
    {"jit_compile"},    {"use_ema"},           {"ema_momentum"},    {"ema_overwrite_frequency"},
    {"weight_decay"},   {"loss_scale_factor"}, {"gradient_accumulation_steps"}};
// Each class's own keys in every Keras release.
constexpr internal::ConfigKey kAdadeltaKeys[] = {{"rho"}, {"epsilon"}};
constexpr internal::ConfigKey kAdagradKeys[] = {{"initial_accumulator_value"}, {"epsilon"}};
constexpr internal::ConfigKey kAdamKeys[] = {{"beta_1"}, {"beta_2"}, {"epsilon"}, {"amsgrad"}};
constexpr internal::ConfigKey kAdamaxKeys[] = {{"beta_1"}, {"beta_2"}, {"epsilon"}};
constexpr internal::ConfigKey kFtrlKeys[] = {{"learning_rate_power"},
                                             {"initial_accumulator_value"},
                                             {"l1_regularization_strength"},
                                             {"l2_regularization_strength"},
                                             {"l2_shrinkage_regularization_strength"},
                                             {"beta"}};
constexpr internal::ConfigKey kLionKeys[] = {{"beta_1"}, {"beta_2"}};
constexpr internal::ConfigKey kNadamKeys[] = {{"beta_1"}, {"beta_2"}, {"epsilon"}, {"schedule_decay"}};
constexpr internal::ConfigKey kRMSpropKeys[] = {{"rho"}, {"momentum"}, {"epsilon"}, {"centered"}};
constexpr internal::ConfigKey kSGDKeys[] = {{"momentum"}, {"nesterov"}};
// LossScaleOptimizer's own (tf.keras 2.4+, Keras 3, which adds the base keys).
constexpr internal::ConfigKey kLossScaleOptimizerKeys[] = {
    {"inner_optimizer"}, {"dynamic"}, {"initial_scale"}, {"dynamic_growth_steps"}};

struct OptimizerClass {
  const char* name;
  OptimizerHandle (*make)(const ConfigReader& c);
  internal::ConfigKeys keys;
};

// One row per class, in name order: the order the unknown-class error lists them in.
const OptimizerClass kOptimizerClasses[] = {
    {"Adadelta",
     [](const ConfigReader& c) -> OptimizerHandle {
       AdadeltaOptions o;
       return Adadelta(with_clipping(
           c, AdadeltaOptions{.learning_rate = c.learning_rate(o.learning_rate), .rho = c.number("rho", o.rho),
                        .epsilon = c.number("epsilon", o.epsilon), .name = c.name(o.name)}));
     },
     kAdadeltaKeys},
    {"Adagrad",
     [](const ConfigReader& c) -> OptimizerHandle {
       AdagradOptions o;
       return Adagrad(with_clipping(
           c, AdagradOptions{.learning_rate = c.learning_rate(o.learning_rate),
                       .initial_accumulator_value = c.number("initial_accumulator_value", o.initial_accumulator_value),
                       .epsilon = c.number("epsilon", o.epsilon), .name = c.name(o.name)}));
     },
     kAdagradKeys},
    {"Adam",
     [](const ConfigReader& c) -> OptimizerHandle {
       AdamOptions o;
       return Adam(with_clipping(
           c, AdamOptions{.learning_rate = c.learning_rate(o.learning_rate), .beta_1 = c.number("beta_1", o.beta_1),
                    .beta_2 = c.number("beta_2", o.beta_2), .epsilon = c.number("epsilon", o.epsilon),
                    .name = c.name(o.name)}));
     },
     kAdamKeys},
    {"AdamW",
     [](const ConfigReader& c) -> OptimizerHandle {
       AdamWOptions o;
       return AdamW(with_clipping(
           c, AdamWOptions{.learning_rate = c.learning_rate(o.learning_rate),
                     .weight_decay = c.number("weight_decay", o.weight_decay), .beta_1 = c.number("beta_1", o.beta_1),
                     .beta_2 = c.number("beta_2", o.beta_2), .epsilon = c.number("epsilon", o.epsilon),
                     .name = c.name(o.name)}));
     },
     kAdamKeys},
    {"Adamax",
     [](const ConfigReader& c) -> OptimizerHandle {
       AdamaxOptions o;
       return Adamax(with_clipping(
           c, AdamaxOptions{.learning_rate = c.learning_rate(o.learning_rate), .beta_1 = c.number("beta_1", o.beta_1),
                      .beta_2 = c.number("beta_2", o.beta_2), .epsilon = c.number("epsilon", o.epsilon),
                      .name = c.name(o.name)}));
     },
     kAdamaxKeys},
    {"Ftrl",
     [](const ConfigReader& c) -> OptimizerHandle {
       FtrlOptions o;
       return Ftrl(with_clipping(
           c, FtrlOptions{.learning_rate = c.learning_rate(o.learning_rate),
                    .learning_rate_power = c.number("learning_rate_power", o.learning_rate_power),
                    .initial_accumulator_value = c.number("initial_accumulator_value", o.initial_accumulator_value),
                    .l1_regularization_strength = c.number("l1_regularization_strength", o.l1_regularization_strength),
                    .l2_regularization_strength = c.number("l2_regularization_strength", o.l2_regularization_strength),
                    .l2_shrinkage_regularization_strength =
                        c.number("l2_shrinkage_regularization_strength", o.l2_shrinkage_regularization_strength),
                    .beta = c.number("beta", o.beta), .name = c.name(o.name)}));
     },
     kFtrlKeys},
    {"Lion",
     [](const ConfigReader& c) -> OptimizerHandle {
       LionOptions o;
       return Lion(with_clipping(
           c, LionOptions{.learning_rate = c.learning_rate(o.learning_rate), .beta_1 = c.number("beta_1", o.beta_1),
                    .beta_2 = c.number("beta_2", o.beta_2), .name = c.name(o.name)}));
     },
     kLionKeys},
    {"Nadam",
     [](const ConfigReader& c) -> OptimizerHandle {
       NadamOptions o;
       return Nadam(with_clipping(
           c, NadamOptions{.learning_rate = c.learning_rate(o.learning_rate, /*decay_is_lr_decay=*/false),
                     .beta_1 = c.number("beta_1", o.beta_1), .beta_2 = c.number("beta_2", o.beta_2),
                     .epsilon = c.number("epsilon", o.epsilon), .name = c.name(o.name),
                     .schedule_decay = nadam_schedule_decay(c)}));
     },
     kNadamKeys},
    {"RMSprop",
     [](const ConfigReader& c) -> OptimizerHandle {
       RMSpropOptions o;
       return RMSprop(with_clipping(
           c, RMSpropOptions{.learning_rate = c.learning_rate(o.learning_rate), .rho = c.number("rho", o.rho),
                       .momentum = c.number("momentum", o.momentum), .epsilon = c.number("epsilon", o.epsilon),
                       .centered = c.flag("centered", o.centered), .name = c.name(o.name)}));
     },
     kRMSpropKeys},
    {"SGD",
     [](const ConfigReader& c) -> OptimizerHandle {
       SGDOptions o;
       return SGD(with_clipping(
           c, SGDOptions{.learning_rate = c.learning_rate(o.learning_rate), .momentum = c.number("momentum", o.momentum),
                   .nesterov = c.flag("nesterov", o.nesterov), .name = c.name(o.name)}));
     },
     kSGDKeys},
};

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// "Custom>Adam" (tf.keras 2.11+'s registered name), "ExperimentalAdam", "adam" -> "adam".
std::string canonical(const std::string& class_name) {
  std::string name = class_name;
  const std::string custom = "Custom>";
  if (name.starts_with(custom)) name.erase(0, custom.size());
  name = lower(name);
  const std::string experimental = "experimental";
  if (name.starts_with(experimental)) name.erase(0, experimental.size());
  return name;
}

}  // namespace

namespace {

// Keras 2.4+ and 3 write {"inner_optimizer": {"class_name", "config"}, "dynamic",
// "initial_scale", "dynamic_growth_steps"} (Keras 3 adds "name" and the base keys).
OptimizerHandle loss_scale_optimizer_from_config(const std::string& config_json) {
  return internal::guarded(kWhere, [&] {
    const json config = internal::parse(config_json, kWhere);
    if (!config.is_object() || !config.contains("inner_optimizer"))
      KILN_THROW(ConfigError, "[", kWhere, "] a LossScaleOptimizer config needs \"inner_optimizer\", received ",
                 config.dump().substr(0, 200), ".");
    internal::expect_only_keys(config, {kLossScaleOptimizerKeys, kOptimizerBaseKeys}, "LossScaleOptimizer", kWhere);
    json inner_config = json::object();
    const std::string inner_class = internal::keras_object_class(config["inner_optimizer"], kWhere, &inner_config);
    LossScaleOptimizerOptions o;
    o.dynamic = config.value("dynamic", o.dynamic);
    o.initial_scale = config.value("initial_scale", o.initial_scale);
    o.dynamic_growth_steps = config.value("dynamic_growth_steps", o.dynamic_growth_steps);
    if (config.contains("name") && config["name"].is_string()) o.name = config["name"].get<std::string>();
    return OptimizerHandle(LossScaleOptimizer(optimizer_from_config(inner_class, inner_config.dump()), o));
  });
}

}  // namespace

OptimizerHandle optimizer_from_config(const std::string& class_name, const std::string& config_json) {
  const std::string wanted = canonical(class_name);
  // tf.keras 2.11-2.15 name the wrapper of their new optimizers LossScaleOptimizerV3.
  if (wanted == "lossscaleoptimizer" || wanted == "lossscaleoptimizerv3")
    return loss_scale_optimizer_from_config(config_json);
  const auto* found = std::find_if(std::begin(kOptimizerClasses), std::end(kOptimizerClasses),
                                   [&](const OptimizerClass& c) { return lower(c.name) == wanted; });
  if (found == std::end(kOptimizerClasses)) {
    std::string known;
    for (const OptimizerClass& c : kOptimizerClasses) known += std::string(known.empty() ? "" : ", ") + c.name;
    KILN_THROW(ConfigError, "[", kWhere, "] unknown optimizer '", class_name, "': Kiln knows ", known,
               " (in any case, or as tf.keras 2.11+ writes them: 'Custom>Adam'). Hint: pass an Optimizer object, "
               "or load with compile=false and compile yourself.");
  }
  return internal::guarded(kWhere, [&] {
    json config = internal::parse(config_json, kWhere);
    if (!config.is_object())
      KILN_THROW(ConfigError, "[", kWhere, "] expected the ", found->name, " config as a JSON object, received ",
                 config.dump().substr(0, 200), ".");
    const std::string name = found->name;
    internal::expect_only_keys(config, {found->keys, kOptimizerBaseKeys}, name, kWhere);
    const ConfigReader reader(name, std::move(config));
    reject_unsupported(reader, /*takes_weight_decay=*/name == "AdamW");
    return found->make(reader);
  });
}

}  // namespace kiln::keras
