// Lion update as trace ops.
#include "kiln/keras/optimizers/lion.h"

#include "kiln/core/check.h"
#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

Lion::Lion(LionOptions options)
    : Optimizer(options.name, options.learning_rate, clipping_of(options)),
      beta_1_(options.beta_1), beta_2_(options.beta_2) {
  if (beta_1_ <= 0 || beta_1_ > 1)
    KILN_THROW(ValueError, "[Lion] expected beta_1 in (0, 1], received beta_1=", beta_1_,
               ". Hint: beta_1 = 0 makes Lion signSGD.");
}

std::string Lion::get_config() const {
  return config_with(Optimizer::get_config(), {{"beta_1", beta_1_}, {"beta_2", beta_2_}});
}

void Lion::build(const std::vector<Variable>& vars) {
  for (const Variable& var : vars) m_.push_back(add_slot(var, "m"));
}

void Lion::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                       const Tensor& /*local_step*/) {
  Tensor m = m_[index].read();
  var.assign(var.read() - lr * sign(beta_1_ * m + (1.0 - beta_1_) * grad));
  m_[index].assign(beta_2_ * m + (1.0 - beta_2_) * grad);
}

}  // namespace kiln::keras
