// Schedules as trace ops. The IR has no cos, so CosineDecay uses a polynomial (below).
#include "kiln/keras/optimizers/schedules.h"

#include <cmath>
#include <numbers>

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"
#include "kiln/keras/config_keys_impl.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

double LearningRateSchedule::at(int64_t step) const {
  return (*this)(Tensor::scalar(static_cast<double>(step))).to_vector<double>()[0];
}

StepDecay::StepDecay(const char* name, double initial_learning_rate, int64_t decay_steps, double decay_rate,
                     bool staircase)
    : initial_(initial_learning_rate), decay_rate_(decay_rate), decay_steps_(decay_steps), staircase_(staircase) {
  if (decay_steps <= 0) KILN_THROW(ValueError, "[", name, "] expected decay_steps > 0, received ", decay_steps, ".");
}

Tensor StepDecay::progress(const Tensor& step) const {
  Tensor p = step / static_cast<double>(decay_steps_);
  if (staircase_) p = cast(cast(p, DType::kI64), p.dtype());  // truncation = floor for p >= 0
  return p;
}

std::string StepDecay::get_config() const {
  return nlohmann::json{{"initial_learning_rate", initial_}, {"decay_steps", decay_steps_}, {"decay_rate", decay_rate_},
                        {"staircase", staircase_}, {"name", nullptr}}.dump();
}

Tensor ExponentialDecay::operator()(const Tensor& step) const { return initial_ * exp(progress(step) * std::log(decay_rate_)); }

Tensor InverseTimeDecay::operator()(const Tensor& step) const { return initial_ / (1.0 + decay_rate_ * progress(step)); }

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<double> boundaries, std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  if (values_.size() != boundaries_.size() + 1)
    KILN_THROW(ValueError, "[PiecewiseConstantDecay] expected one more value than boundaries, received ",
               boundaries_.size(), " boundaries and ", values_.size(), " values.");
}

Tensor PiecewiseConstantDecay::operator()(const Tensor& step) const {
  Tensor lr = full(step.shape(), values_.back());
  for (size_t i = boundaries_.size(); i-- > 0;)
    lr = where(less_equal(step, full(step.shape(), boundaries_[i])), full(step.shape(), values_[i]), lr);
  return lr;
}

std::string PiecewiseConstantDecay::get_config() const {
  return nlohmann::json{{"boundaries", boundaries_}, {"values", values_}, {"name", nullptr}}.dump();
}

CosineDecay::CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha)
    : initial_(initial_learning_rate), alpha_(alpha), decay_steps_(decay_steps) {
  if (decay_steps <= 0)
    KILN_THROW(ValueError, "[CosineDecay] expected decay_steps > 0, received ", decay_steps, ".");
}

std::string CosineDecay::get_config() const {
  return nlohmann::json{{"initial_learning_rate", initial_}, {"decay_steps", decay_steps_}, {"alpha", alpha_},
                        {"name", nullptr}}.dump();
}

LearningRate learning_rate_from_config(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_number()) return j.get<double>();
  if (!j.is_object() || !j.contains("class_name") || !j.contains("config") || !j["config"].is_object())
    KILN_THROW(ConfigError, "[learning_rate] expected a number or {\"class_name\": ..., \"config\": {...}}, received ",
               text.substr(0, 200), ".");
  internal::expect_only_keys(j, {internal::serialized_object_keys()}, "serialized schedule", "learning_rate");
  const std::string cls = j["class_name"].get<std::string>();
  const nlohmann::json& c = j["config"];
  // Each schedule's keys in tf.keras 2.x and Keras 3; CosineDecay's warmup (2.13+) loads when off.
  static constexpr internal::ConfigKey kDecayKeys[] = {
      {"initial_learning_rate"}, {"decay_steps"}, {"decay_rate"}, {"staircase"}, {"name"}};
  static constexpr internal::ConfigKey kPiecewiseKeys[] = {{"boundaries"}, {"values"}, {"name"}};
  static constexpr internal::ConfigKey kCosineKeys[] = {
      {"initial_learning_rate"}, {"decay_steps"}, {"alpha"}, {"name"},
      {"warmup_target", "null", "Kiln's CosineDecay has no warmup"},
      {"warmup_steps", "0", "Kiln's CosineDecay has no warmup"}};
  if (cls == "ExponentialDecay" || cls == "InverseTimeDecay")
    internal::expect_only_keys(c, {kDecayKeys}, cls, "learning_rate");
  if (cls == "PiecewiseConstantDecay") internal::expect_only_keys(c, {kPiecewiseKeys}, cls, "learning_rate");
  if (cls == "CosineDecay") internal::expect_only_keys(c, {kCosineKeys}, cls, "learning_rate");
  try {
    if (cls == "ExponentialDecay")
      return ExponentialDecay(c.at("initial_learning_rate").get<double>(), c.at("decay_steps").get<int64_t>(),
                              c.at("decay_rate").get<double>(), c.value("staircase", false));
    if (cls == "InverseTimeDecay")
      return InverseTimeDecay(c.at("initial_learning_rate").get<double>(), c.at("decay_steps").get<int64_t>(),
                              c.at("decay_rate").get<double>(), c.value("staircase", false));
    if (cls == "PiecewiseConstantDecay")
      return PiecewiseConstantDecay(c.at("boundaries").get<std::vector<double>>(), c.at("values").get<std::vector<double>>());
    if (cls == "CosineDecay")
      return CosineDecay(c.at("initial_learning_rate").get<double>(), c.at("decay_steps").get<int64_t>(),
                         c.value("alpha", 0.0));
  } catch (const nlohmann::json::exception& e) {
    // The JSON library's words without its "[json.exception...]" tag.
    const std::string what = e.what();
    const size_t tag = what.rfind("] ");
    KILN_THROW(ConfigError, "[learning_rate] ", cls, " config ", c.dump().substr(0, 200), ": ",
               tag == std::string::npos ? what : what.substr(tag + 2), ".");
  }
  KILN_THROW(ConfigError, "[learning_rate] unknown schedule class '", cls,
             "'. Hint: Kiln has ExponentialDecay, InverseTimeDecay, PiecewiseConstantDecay and CosineDecay.");
}

std::string learning_rate_to_config(const LearningRate& learning_rate) {
  if (!learning_rate.schedule) return nlohmann::json(learning_rate.constant).dump();
  // tf.keras 2.13+'s serialize_keras_object layout (older versions omit module/registered_name).
  return nlohmann::json{{"module", "keras.optimizers.schedules"},
                        {"class_name", learning_rate.schedule->class_name()},
                        {"config", nlohmann::json::parse(learning_rate.schedule->get_config())},
                        {"registered_name", nullptr}}.dump();
}

Tensor CosineDecay::operator()(const Tensor& step) const {
  Tensor fraction = minimum(step, static_cast<double>(decay_steps_)) / static_cast<double>(decay_steps_);
  // cos(pi f) = -sin(u) with u = pi (f - 1/2) in [-pi/2, pi/2]: Taylor series to u^15
  // (error below 1e-11 there, far under f32 rounding).
  Tensor u = (fraction - 0.5) * std::numbers::pi;
  Tensor u2 = u * u, term = u, sin_u = u;
  for (int k = 1; k <= 7; ++k) {
    term = term * u2 * (-1.0 / static_cast<double>((2 * k) * (2 * k + 1)));
    sin_u = sin_u + term;
  }
  Tensor cosine = 0.5 * (1.0 - sin_u);
  return initial_ * ((1.0 - alpha_) * cosine + alpha_);
}

}  // namespace kiln::keras
