// Adamax update as trace ops.
#include "kiln/keras/optimizers/adamax.h"

#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

Adamax::Adamax(AdamaxOptions options)
    : Optimizer(options.name, options.learning_rate, clipping_of(options)),
      beta_1_(options.beta_1), beta_2_(options.beta_2), epsilon_(options.epsilon) {}

std::string Adamax::get_config() const {
  return config_with(Optimizer::get_config(), {{"beta_1", beta_1_}, {"beta_2", beta_2_}, {"epsilon", epsilon_}});
}

void Adamax::build(const std::vector<Variable>& vars) {
  for (const Variable& var : vars) {
    m_.push_back(add_slot(var, "m"));
    u_.push_back(add_slot(var, "u"));
  }
}

void Adamax::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                         const Tensor& local_step) {
  Tensor beta_1_power = pow(full(Shape(DType::kF32, {}), beta_1_), local_step);
  Tensor m = beta_1_ * m_[index].read() + (1.0 - beta_1_) * grad;
  Tensor u = maximum(beta_2_ * u_[index].read(), abs(grad));
  m_[index].assign(m);
  u_[index].assign(u);
  var.assign(var.read() - lr * m / ((1.0 - beta_1_power) * (u + epsilon_)));
}

}  // namespace kiln::keras
