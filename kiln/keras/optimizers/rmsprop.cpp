// RMSprop update as trace ops.
#include "kiln/keras/optimizers/rmsprop.h"

#include <nlohmann/json.hpp>

#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

RMSprop::RMSprop(RMSpropOptions options)
    : Optimizer(options.name, options.learning_rate, clipping_of(options)),
      options_(options) {}

std::string RMSprop::get_config() const {
  nlohmann::json j = nlohmann::json::parse(Optimizer::get_config());
  j["rho"] = options_.rho;
  j["momentum"] = options_.momentum;
  j["epsilon"] = options_.epsilon;
  j["centered"] = options_.centered;
  return j.dump();
}

void RMSprop::build(const std::vector<Variable>& vars) {
  for (const Variable& var : vars) {
    velocity_.push_back(add_slot(var, "velocity"));
    if (options_.centered) average_gradient_.push_back(add_slot(var, "average_gradient"));
    if (options_.momentum > 0) momentum_.push_back(add_slot(var, "momentum"));
  }
}

void RMSprop::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                          const Tensor& /*local_step*/) {
  const double rho = options_.rho;
  Tensor ms = rho * velocity_[index].read() + (1.0 - rho) * grad * grad;
  velocity_[index].assign(ms);
  Tensor denominator = ms;
  if (options_.centered) {
    Tensor mg = rho * average_gradient_[index].read() + (1.0 - rho) * grad;
    average_gradient_[index].assign(mg);
    denominator = ms - mg * mg;
  }
  Tensor increment = lr * grad / (sqrt(denominator) + options_.epsilon);
  if (options_.momentum > 0) {
    Tensor mom = options_.momentum * momentum_[index].read() + increment;
    momentum_[index].assign(mom);
    increment = mom;
  }
  var.assign(var.read() - increment);
}

}  // namespace kiln::keras
