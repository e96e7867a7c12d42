// Adam and AdamW updates as trace ops.
#include "kiln/keras/optimizers/adam.h"

#include <nlohmann/json.hpp>

#include "kiln/trace/ops/elementwise.h"

namespace kiln::keras {

Adam::Adam(AdamOptions options)
    : Optimizer(options.name, options.learning_rate, clipping_of(options)),
      beta_1_(options.beta_1), beta_2_(options.beta_2), epsilon_(options.epsilon) {}

void Adam::build(const std::vector<Variable>& vars) {
  for (const Variable& var : vars) {
    m_.push_back(add_slot(var, "m"));
    v_.push_back(add_slot(var, "v"));
  }
}

void Adam::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                       const Tensor& local_step) {
  Shape scalar(DType::kF32, {});
  Tensor lr_t = lr * sqrt(1.0 - pow(full(scalar, beta_2_), local_step)) / (1.0 - pow(full(scalar, beta_1_), local_step));
  Tensor m = beta_1_ * m_[index].read() + (1.0 - beta_1_) * grad;
  Tensor v = beta_2_ * v_[index].read() + (1.0 - beta_2_) * grad * grad;
  m_[index].assign(m);
  v_[index].assign(v);
  var.assign(var.read() - lr_t * m / (sqrt(v) + epsilon_));
}

std::string Adam::get_config() const {
  nlohmann::json j = nlohmann::json::parse(Optimizer::get_config());
  j["beta_1"] = beta_1_;
  j["beta_2"] = beta_2_;
  j["epsilon"] = epsilon_;
  j["amsgrad"] = false;
  return j.dump();
}

AdamW::AdamW(AdamWOptions options)
    : Adam({.learning_rate = options.learning_rate, .beta_1 = options.beta_1, .beta_2 = options.beta_2,
            .epsilon = options.epsilon, .name = options.name, .clipnorm = options.clipnorm,
            .clipvalue = options.clipvalue, .global_clipnorm = options.global_clipnorm}),
      weight_decay_(options.weight_decay) {}

std::string AdamW::get_config() const { return config_with(Adam::get_config(), {{"weight_decay", weight_decay_}}); }

void AdamW::update_step(const Tensor& grad, const Variable& var, size_t index, const Tensor& lr,
                        const Tensor& local_step) {
  var.assign(var.read() - var.read() * (lr * weight_decay_));
  Adam::update_step(grad, var, index, lr, local_step);
}

}  // namespace kiln::keras
