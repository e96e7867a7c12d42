// Adadelta update as trace ops.
#include "kiln/keras/optimizers/adadelta.h"

#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

Adadelta::Adadelta(AdadeltaOptions options)
    : Optimizer(options.name, options.learning_rate, clipping_of(options)),
      rho_(options.rho), epsilon_(options.epsilon) {}

std::string Adadelta::get_config() const {
  return config_with(Optimizer::get_config(), {{"rho", rho_}, {"epsilon", epsilon_}});
}

void Adadelta::build(const std::vector<Variable>& vars) {
  for (const Variable& var : vars) {
    accumulated_grad_.push_back(add_slot(var, "accumulated_grad"));
    accumulated_delta_var_.push_back(add_slot(var, "accumulated_delta_var"));
  }
}

void Adadelta::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                           const Tensor& /*local_step*/) {
  Tensor accumulated_grad = rho_ * accumulated_grad_[index].read() + (1.0 - rho_) * grad * grad;
  accumulated_grad_[index].assign(accumulated_grad);
  const Variable& accumulated_delta_var = accumulated_delta_var_[index];
  Tensor delta = -(sqrt(accumulated_delta_var.read() + epsilon_) * grad / sqrt(accumulated_grad + epsilon_));
  accumulated_delta_var.assign(rho_ * accumulated_delta_var.read() + (1.0 - rho_) * delta * delta);
  var.assign(var.read() + lr * delta);
}

}  // namespace kiln::keras
