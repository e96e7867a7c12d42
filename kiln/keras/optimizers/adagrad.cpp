// Adagrad update as trace ops.
#include "kiln/keras/optimizers/adagrad.h"

#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

Adagrad::Adagrad(AdagradOptions options)
    : Optimizer(options.name, options.learning_rate, clipping_of(options)),
      initial_accumulator_value_(options.initial_accumulator_value), epsilon_(options.epsilon) {}

std::string Adagrad::get_config() const {
  return config_with(Optimizer::get_config(),
                     {{"initial_accumulator_value", initial_accumulator_value_}, {"epsilon", epsilon_}});
}

void Adagrad::build(const std::vector<Variable>& vars) {
  for (const Variable& var : vars) accumulator_.push_back(add_slot(var, "accumulator", initial_accumulator_value_));
}

void Adagrad::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                          const Tensor& /*local_step*/) {
  Tensor accumulator = accumulator_[index].read() + grad * grad;
  accumulator_[index].assign(accumulator);
  var.assign(var.read() - lr * grad / sqrt(accumulator + epsilon_));
}

}  // namespace kiln::keras
