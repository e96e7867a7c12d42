// Ftrl update as trace ops (TensorFlow's ApplyFtrlV2, as Keras 2.11+/3 write it).
#include "kiln/keras/optimizers/ftrl.h"

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

namespace {
void check_not_negative(const char* name, double value) {
  if (value < 0)
    KILN_THROW(ValueError, "[Ftrl] expected ", name, " to be positive or zero, received ", name, "=", value, ".");
}
}  // namespace

Ftrl::Ftrl(FtrlOptions options)
    : Optimizer(options.name, options.learning_rate, clipping_of(options)),
      options_(options) {
  check_not_negative("initial_accumulator_value", options_.initial_accumulator_value);
  check_not_negative("l1_regularization_strength", options_.l1_regularization_strength);
  check_not_negative("l2_regularization_strength", options_.l2_regularization_strength);
  check_not_negative("l2_shrinkage_regularization_strength", options_.l2_shrinkage_regularization_strength);
  if (options_.learning_rate_power > 0)
    KILN_THROW(ValueError, "[Ftrl] expected learning_rate_power to be negative or zero, received learning_rate_power=",
               options_.learning_rate_power, ".");
}

std::string Ftrl::get_config() const {
  return config_with(Optimizer::get_config(),
                     {{"learning_rate_power", options_.learning_rate_power},
                      {"initial_accumulator_value", options_.initial_accumulator_value},
                      {"l1_regularization_strength", options_.l1_regularization_strength},
                      {"l2_regularization_strength", options_.l2_regularization_strength},
                      {"l2_shrinkage_regularization_strength", options_.l2_shrinkage_regularization_strength},
                      {"beta", options_.beta}});
}

void Ftrl::build(const std::vector<Variable>& vars) {
  // Per variable, accumulator then linear: tf.keras's legacy Ftrl lists its weights so.
  for (const Variable& var : vars) {
    accumulator_.push_back(add_slot(var, "accumulator", options_.initial_accumulator_value));
    linear_.push_back(add_slot(var, "linear"));
  }
}

void Ftrl::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                       const Tensor& /*local_step*/) {
  const double power = -options_.learning_rate_power;
  const double l1 = options_.l1_regularization_strength;
  Tensor l2 = options_.l2_regularization_strength + options_.beta / (2.0 * lr);
  Tensor w = var.read();
  Tensor accumulator = accumulator_[index].read();
  Tensor new_accumulator = accumulator + grad * grad;
  Tensor shrunk_grad = grad + 2.0 * options_.l2_shrinkage_regularization_strength * w;
  Tensor linear = linear_[index].read() + shrunk_grad - (pow(new_accumulator, power) - pow(accumulator, power)) / lr * w;
  Tensor quadratic = pow(new_accumulator, power) / lr + 2.0 * l2;
  linear_[index].assign(linear);
  accumulator_[index].assign(new_accumulator);
  var.assign((minimum(maximum(linear, -l1), l1) - linear) / quadratic);
}

}  // namespace kiln::keras
