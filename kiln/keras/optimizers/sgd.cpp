// SGD: Keras's momentum formulation (velocity holds -lr * accumulated gradient).
#include "kiln/keras/optimizers/sgd.h"

#include <nlohmann/json.hpp>

#include "kiln/core/check.h"

namespace kiln::keras {

SGD::SGD(SGDOptions options)
    : Optimizer(options.name, options.learning_rate, clipping_of(options)),
      momentum_(options.momentum), nesterov_(options.nesterov) {
  if (momentum_ < 0 || momentum_ > 1)
    KILN_THROW(ValueError, "[SGD] expected momentum in [0, 1], received momentum=", momentum_, ".");
}

std::string SGD::get_config() const {
  nlohmann::json j = nlohmann::json::parse(Optimizer::get_config());
  j["momentum"] = momentum_;
  j["nesterov"] = nesterov_;
  return j.dump();
}

void SGD::build(const std::vector<Variable>& vars) {
  if (momentum_ == 0) return;
  for (const Variable& v : vars) velocity_.push_back(add_slot(v, "momentum"));
}

void SGD::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                      const Tensor& /*local_step*/) {
  if (momentum_ == 0) {
    var.assign(var.read() - lr * grad);
    return;
  }
  const Variable& velocity = velocity_[index];
  Tensor v = momentum_ * velocity.read() - lr * grad;
  velocity.assign(v);
  var.assign(nesterov_ ? var.read() + momentum_ * v - lr * grad : var.read() + v);
}

}  // namespace kiln::keras
